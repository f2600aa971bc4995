#!/usr/bin/env bash
# Call 1 of bench/results/wgmma-d64-wide-rows/: from the repository root on the H200, with
# build-carry/ holding bin/tilepath, plugins/ (the change: at D = 64 the two-head wgmma CTA
# reads both heads' adjacent 64-byte rows with one TMA box into a 128-byte ring row),
# plugins-old/ (the CUDA plugin before it: a box per head's rows; every cubin byte-identical
# to the bundled kernels) and gpu-tests/cuda_gpu_tests of the change.
#  1. the whole GPU test suite (the two-head D = 64 cases among them);
#  2. compute-sanitizer memcheck, racecheck and synccheck on four two-head D = 64 tests;
#  3. bench/wgmma-d64-wide-rows.json once per arm, two rounds, the arms' order reversed in the
#     second: one-head (TILEPATH_CUDA_WGMMA_KV_HEADS_PER_CTA=1), box-per-head (the old plugin,
#     =2), wide-rows (=2), wide-rows-l2-256 (=2, TILEPATH_CUDA_WGMMA_L2_PROMOTION=256);
#  4. the table of bench/wgmma_layouts_ab.py.
# Everything comes back in $OUT/call.tar.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
export TILEPATH_MODELS_DIR=$PWD/models
NEW=$PWD/build-carry/plugins OLD=$PWD/build-carry/plugins-old
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv > "$W/gpu.txt" 2>&1
date -u +"tests %T" >> "$W/times.txt"
TILEPATH_PLUGIN_PATH=$NEW build-carry/gpu-tests/cuda_gpu_tests > "$W/gpu-tests.log" 2>&1
echo "gpu tests rc=$?" >> "$W/times.txt"
F='K8V8/WgmmaTwoHeadKernel.*/head_dim_splits_k8v8_fp8_qk_k_only_d64*:K8V8/WgmmaTwoHeadKernel.*/d64_page_k8v8_transform_full_d64_p8_*:K8V8/WgmmaTwoHeadKernel.*/d64_one_row_k8v8_fp8_qk_full*:K8V8/WgmmaTwoHeadKernel.*/d64_long_k8v8_transform_k_only*'
for t in memcheck racecheck synccheck; do
  date -u +"$t %T" >> "$W/times.txt"
  TILEPATH_PLUGIN_PATH=$NEW compute-sanitizer --tool $t --error-exitcode 3 build-carry/gpu-tests/cuda_gpu_tests \
    --gtest_filter="$F" > "$W/sanitize-$t.log" 2>&1
  echo "$t rc=$?" >> "$W/times.txt"
done
arm() {  # name round
  local env=(TILEPATH_CUDA_WGMMA_KV_HEADS_PER_CTA=2 TILEPATH_PLUGIN_PATH=$NEW)
  case $1 in
    one-head) env=(TILEPATH_CUDA_WGMMA_KV_HEADS_PER_CTA=1 TILEPATH_PLUGIN_PATH=$NEW) ;;
    box-per-head) env=(TILEPATH_CUDA_WGMMA_KV_HEADS_PER_CTA=2 TILEPATH_PLUGIN_PATH=$OLD) ;;
    wide-rows-l2-256) env+=(TILEPATH_CUDA_WGMMA_L2_PROMOTION=256) ;;
  esac
  date -u +"$1 round $2 %T" >> "$W/times.txt"
  env "${env[@]}" build-carry/bin/tilepath sweep bench/wgmma-d64-wide-rows.json --backend cuda \
    --db "$W/$1-round$2.sqlite" > "$W/sweep-$1-$2.log" 2>&1
  echo "$1 round $2 rc=$?" >> "$W/times.txt"
}
for a in one-head box-per-head wide-rows wide-rows-l2-256; do arm $a 1; done
for a in wide-rows-l2-256 wide-rows box-per-head one-head; do arm $a 2; done
date -u +"end %T" >> "$W/times.txt"
args=()
for a in one-head box-per-head wide-rows wide-rows-l2-256; do args+=(--arm "$a=$W/$a-round1.sqlite,$W/$a-round2.sqlite"); done
python3 bench/wgmma_layouts_ab.py "${args[@]}" > "$W/ab-table.md" 2> "$W/ab-table.err"
tar cJf "$OUT/call.tar.xz" -C "$W" .
cat "$W/times.txt"; grep -E "PASSED|FAILED|tests from" "$W/gpu-tests.log" | tail -5
