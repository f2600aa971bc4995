#!/usr/bin/env bash
# Call 2 of bench/results/wgmma-cp-async-producers/: on an H200, the bundled database's GPU
# (on any other GPU it stops at once), with the change's plugins (build-carry/plugins-cp-async):
#   1. the 36 bundled cases on the cp.async ring measured again (the narrowed specs of
#      bench/results/wgmma-cp-async-ring/regen-specs/) into regen.sqlite, which merge.sh puts
#      into data/h200-sweep.sqlite;
#   2. fp8_qk k_only at the six 1-token-page shapes on both matrix instruction families in one
#      process, each kernel beside its load_only, both caches
#      (bench/results/wgmma-cp-async-ring/wgmma-vs-mma-sync-load-only-page1.json) into
#      ab-page1.sqlite: the 24 page-1 cases of bench/results/wgmma-vs-mma-sync-load-only/;
#   3. ab.sh in ROUNDS rounds (default 2).
# Before them, on any GPU, the SASS of each arm's fp8_qk k_only D = 128 kernel (sass-*.txt).
# build-carry/ as for ab.sh. From the repository root on the GPU machine:
#   OUT=$OUT bash bench/results/wgmma-cp-async-producers/call2.sh
# Back come $OUT/call.tar.xz (everything), regen.sqlite, ab-page1.sqlite and summary.txt.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
export TILEPATH_MODELS_DIR=$PWD/models
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$W/smi.txt" 2>&1
# First, on any GPU (the cubins are the same), the SASS of each arm's K8/V8 fp8_qk k_only
# D = 128 kernel on the cp.async ring, and its counts of copies, shuffles and instructions.
FUN=_ZN8tilepath4cuda7kernels19decode_wgmma_kernelINS1_22WgmmaCpAsyncRingTraitsINS1_11WgmmaTraitsILNS1_8KOperandE2ELNS1_8VOperandE2ELi128EEEEEEEvNS1_11WgmmaParamsE
for arm in base lean1 lean2; do
  cuobjdump -sass -fun "$FUN" "build-carry/plugins-cp-async-$arm/libtilepath_backend_cuda.so" > "$W/sass-$arm.txt" 2>&1
  echo "$arm: $(grep -c LDGSTS "$W/sass-$arm.txt") LDGSTS, $(grep -c SHFL "$W/sass-$arm.txt") SHFL," \
    "$(grep -cE '^ +/\*[0-9a-f]{4}\*/' "$W/sass-$arm.txt") instructions" >> "$W/sass-summary.txt"
done
if ! grep -q 'H200' "$W/smi.txt"; then
  echo "not an H200: $(sed -n 2p "$W/smi.txt")" | tee -a "$W/times.txt"
  cat "$W/sass-summary.txt"
  tar cJf "$OUT/sass.tar.xz" -C "$W" .
  rm -rf "$W"
  exit 1
fi
export TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins-cp-async
for spec in h200-cuda-grid h200-cuda-grid-k16v16; do
  date -u +"$spec %T" >> "$W/times.txt"
  timeout --signal=INT --kill-after=20 150 build-carry/bin/tilepath sweep \
    "bench/results/wgmma-cp-async-ring/regen-specs/$spec.json" --backend cuda --db "$W/regen.sqlite" >> "$W/regen.log" 2>&1
  echo "  rc=$? $(tail -n 1 "$W/regen.log")" >> "$W/times.txt"
done
python3 -c "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT status, kv, page_size, mma, kernel_name, count(*) FROM cases GROUP BY 1, 2, 3, 4, 5').fetchall())" \
  "$W/regen.sqlite" > "$W/regen-summary.txt" 2>&1
cp "$W/regen.sqlite" "$OUT/regen.sqlite"
date -u +"load_only a/b at 1-token pages %T" >> "$W/times.txt"
timeout --signal=INT --kill-after=20 120 build-carry/bin/tilepath sweep \
  bench/results/wgmma-cp-async-ring/wgmma-vs-mma-sync-load-only-page1.json --backend cuda \
  --db "$W/ab-page1.sqlite" > "$W/ab-page1.log" 2>&1
echo "  rc=$? $(tail -n 1 "$W/ab-page1.log")" >> "$W/times.txt"
cp "$W/ab-page1.sqlite" "$OUT/ab-page1.sqlite"
OUT=$W/ab ROUNDS=${ROUNDS:-2} BUDGET=${AB_BUDGET:-150} bash bench/results/wgmma-cp-async-producers/ab.sh > /dev/null 2>&1
cat "$W/times.txt" "$W/sass-summary.txt" "$W/regen-summary.txt" "$W/ab/w/ab-summary.txt" > "$OUT/summary.txt" 2>&1
tar cJf "$OUT/call.tar.xz" -C "$W" .
rm -rf "$W"
cat "$OUT/summary.txt"
