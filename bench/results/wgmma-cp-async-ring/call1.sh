#!/usr/bin/env bash
# Call 1 of bench/results/wgmma-cp-async-ring/: the wgmma kernels whose producer fills the ring
# with 16-byte cp.async gathers (branch wgmma-cp-async-ring), for the page sizes the TMA boxes do
# not tile: are they correct, and the 36 bundled cases they make measurable. From the repository
# root on the H200, with build-carry/ holding:
#   bin/tilepath                        the CLI
#   plugins-cp-async/                   the branch's plugins
#   gpu-tests-cp-async/cuda_gpu_tests   the branch's GPU tests
# In order, each step given what is left of BUDGET s (default 500), so that the archive is
# written inside a 600-s call (after one small case first: if it fails, memcheck on it and
# nothing else):
#   1. the GPU suite (every kernel against the float64 reference; the cp.async ring at 1, 2 and
#      4-token pages and, by the A/B switch, at 16);
#   2. the 36 bundled cases stored as unsupported (wgmma at 1-token pages) through the narrowed
#      specs of regen-specs/, into regen.sqlite (REGEN_RESUME=<a returned regen.sqlite> resumes);
#      only on an H200, the bundled database's GPU: elsewhere the call checks correctness only;
#   3. compute-sanitizer's four tools on the cp.async ring's cases of device_run.sh sanitize.
# Everything comes back in $OUT/call.tar.xz; the summaries are also printed. call2.sh is the A/B.
#   OUT=$OUT bash bench/results/wgmma-cp-async-ring/call1.sh
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
HERE=bench/results/wgmma-cp-async-ring
export TILEPATH_MODELS_DIR=$PWD/models TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins-cp-async
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$W/smi.txt" 2>&1

deadline=$(($(date +%s) + ${BUDGET:-500}))
left() { local l=$((deadline - $(date +%s))); echo $((l < 1 ? 1 : l)); }
at_most() { local l; l=$(left); echo $((l < $1 ? l : $1)); }

# First one small case of the cp.async ring at 1-token pages, with a short limit: a hang or a
# fault in the new kernels would otherwise take the whole call. If it does not pass, the rest
# is skipped and memcheck runs on that case instead.
SMOKE='*WgmmaKernel.*/page_k8v8_fp8_qk_k_only_d128_p1_*'
date -u +"smoke %T" >> "$W/times.txt"
timeout 60 build-carry/gpu-tests-cp-async/cuda_gpu_tests --gtest_filter="$SMOKE" > "$W/smoke.log" 2>&1
smoke=$?
echo "smoke rc=$smoke $(grep -E '^\[  (PASSED|FAILED)  \]' "$W/smoke.log" | tr '\n' ' ')" >> "$W/times.txt"
# it must have run (a skip passes 0 tests)
if [ $smoke -ne 0 ] || ! grep -q '^\[  PASSED  \] 1 test\.' "$W/smoke.log"; then
  timeout 180 compute-sanitizer --tool memcheck build-carry/gpu-tests-cp-async/cuda_gpu_tests --gtest_filter="$SMOKE" \
    > "$W/smoke-memcheck.log" 2>&1
  echo "smoke memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$W/smoke-memcheck.log" | tail -n 1)" >> "$W/times.txt"
  cat "$W/times.txt"
  tar cJf "$OUT/call.tar.xz" -C "$W" .
  exit 1
fi

date -u +"gpu tests %T" >> "$W/times.txt"
timeout "$(at_most 220)" build-carry/gpu-tests-cp-async/cuda_gpu_tests --gtest_output="xml:$W/gpu-tests.xml" \
  > "$W/gpu-tests.log" 2>&1
echo "gpu tests rc=$? $(date -u +%T); $(grep -E '^\[  (PASSED|FAILED)  \]' "$W/gpu-tests.log" | tr '\n' ' ')" >> "$W/times.txt"

# The cases join an H200 database: on any other GPU the call checks correctness only.
specs="h200-cuda-grid h200-cuda-grid-k16v16"
if ! grep -q 'H200' "$W/smi.txt"; then
  specs=""
  echo "regen skipped: not an H200 ($(sed -n 2p "$W/smi.txt"))" >> "$W/times.txt"
fi
if [ -n "${REGEN_RESUME:-}" ]; then cp "$REGEN_RESUME" "$W/regen.sqlite"; fi
for spec in $specs; do
  date -u +"$spec %T" >> "$W/times.txt"
  timeout --signal=INT --kill-after=20 "$(at_most 150)" build-carry/bin/tilepath sweep "$HERE/regen-specs/$spec.json" \
    --backend cuda --db "$W/regen.sqlite" >> "$W/regen.log" 2>&1
  echo "  rc=$? $(tail -n 1 "$W/regen.log")" >> "$W/times.txt"
done
python3 -c "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT status, kv, page_size, mma, kernel_name, count(*) FROM cases GROUP BY 1, 2, 3, 4, 5').fetchall())" \
  "$W/regen.sqlite" > "$W/regen-summary.txt" 2>&1

# device_run.sh takes its plugins from $BUILD/plugins: a build folder of the branch's plugins.
mkdir -p build-cp-async
ln -sfn ../build-carry/bin build-cp-async/bin
ln -sfn ../build-carry/plugins-cp-async build-cp-async/plugins
date -u +"sanitize %T" >> "$W/times.txt"
if [ "$(left)" -gt 30 ]; then
  OUT=$W/san BUILD=build-cp-async SANITIZE_MATCH='page-size' timeout "$(left)" \
    bash backends/cuda/scripts/device_run.sh sanitize > "$W/sanitize.log" 2>&1
  echo "sanitize rc=$?" >> "$W/times.txt"
fi
date -u +"done %T" >> "$W/times.txt"
cat "$W/times.txt" "$W/regen-summary.txt"
tail -n 3 "$W/sanitize.log" 2>/dev/null
tar cJf "$OUT/call.tar.xz" -C "$W" .
