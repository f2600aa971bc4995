#!/usr/bin/env bash
# Call 1 of bench/results/wgmma-qk-overlap/: from the repository root on the H200, with the
# build of this change in build-carry/ and the CUDA plugin of the bundled kernels in
# build-carry/ab-old/. GPU tests and compute-sanitizer on the new kernels, then the A/B of
# bench/wgmma-qk-overlap.json in two rounds (the builds alternating), then the paged bounds.
set -u
OUT=${OUT:-out}
mkdir -p "$OUT/ab" "$OUT/logs" arm-new arm-old
export TILEPATH_MODELS_DIR=$PWD/models PATH=$PATH:/usr/local/cuda/bin
cp build-carry/plugins/*.so arm-new/
cp build-carry/plugins/libtilepath_backend_cpu.so build-carry/plugins/libtilepath_backend_sim.so arm-old/
cp build-carry/ab-old/libtilepath_backend_cuda.so arm-old/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > "$OUT/logs/smi.txt"
export TILEPATH_PLUGIN_PATH=$PWD/arm-new
date -u +"gpu tests %T" >> "$OUT/logs/times.txt"
build-carry/gpu-tests/cuda_gpu_tests --gtest_output=xml:"$OUT/logs/gpu-tests.xml" > "$OUT/logs/gpu-tests.log" 2>&1
echo "gpu tests rc=$?" >> "$OUT/logs/times.txt"
F='Variants/WgmmaKernel.*/splits_k8v8_fp8_qk_k_only_d128*:Variants/WgmmaKernel.*/ragged_k8v8_transform_full_d128*'
F="$F:K8V8/WgmmaTwoHeadKernel.*/head_dim_splits_k8v8_fp8_qk_k_only_d64*:Variants/WgmmaKernel.*/ragged_k16v16*"
for t in memcheck racecheck synccheck; do
  compute-sanitizer --tool $t --error-exitcode 3 build-carry/gpu-tests/cuda_gpu_tests --gtest_filter="$F" \
    > "$OUT/logs/sanitize-$t.log" 2>&1
  echo "sanitize $t rc=$?" >> "$OUT/logs/times.txt"
done
for round in 1 2; do
  arms="new old"; [ $round = 2 ] && arms="old new"
  for arm in $arms; do
    date -u +"$arm round $round %T" >> "$OUT/logs/times.txt"
    TILEPATH_PLUGIN_PATH=$PWD/arm-$arm build-carry/bin/tilepath sweep bench/wgmma-qk-overlap.json --backend cuda \
      --db "$OUT/ab/$arm-round$round.sqlite" > "$OUT/logs/sweep-$arm-$round.log" 2>&1
  done
done
for sh in 1,32768,32,8 1,32768,8,1 32,32768,8,1; do
  build-carry/bin/paged_read_bound 50 --shape $sh > "$OUT/ab/paged-bound-$sh.json" 2> "$OUT/logs/paged-bound-$sh.err"
done
date -u +"done %T" >> "$OUT/logs/times.txt"
