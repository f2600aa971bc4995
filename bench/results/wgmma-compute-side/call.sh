#!/usr/bin/env bash
# One device call of bench/results/wgmma-compute-side/: the bundled wgmma cases that have
# compute-side ablations (regen-specs/, narrow_specs.py) measured again with stage costs, so
# that each gains compute_only and its isolated stages; then, in the time left, the GPU tests.
# From the repository root on the H200, with the build in build-carry/ (bin, plugins, gpu-tests):
#   OUT=$OUT bash bench/results/wgmma-compute-side/call.sh
# REGEN_RESUME=<regen.sqlite of an earlier call> continues that sweep (it skips the cases it
# holds); REQUIRE_GPU (default H200) names the GPU it measures on; SWEEP_SECONDS (default 520)
# bounds the sweep, CALL_SECONDS (default 570) the call.
# Everything comes back in $OUT/call.tar.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
export TILEPATH_MODELS_DIR=$PWD/models TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$W/smi.txt" 2>&1
CALL_SECONDS=${CALL_SECONDS:-570}
# The cases replace H200 measurements: on another GPU measure nothing (REQUIRE_GPU= lifts this).
if ! grep -q "${REQUIRE_GPU-H200}" "$W/smi.txt"; then
  echo "not run: not an ${REQUIRE_GPU-H200} ($(tail -n 1 "$W/smi.txt"))" | tee "$W/times.txt"
  tar cJf "$OUT/call.tar.xz" -C "$W" .
  exit 0
fi
left_in_call() { echo $((CALL_SECONDS - SECONDS)); }

if [ -n "${REGEN_RESUME:-}" ]; then cp "$REGEN_RESUME" "$W/regen.sqlite"; fi
deadline=$((SECONDS + ${SWEEP_SECONDS:-520}))
for spec in h200-cuda-wgmma h200-cuda-grid h200-cuda-wgmma-16bit h200-cuda-grid-k16v16; do
  left=$((deadline - SECONDS))
  if [ "$left" -le 5 ]; then echo "$spec: no time left" >>"$W/times.txt"; continue; fi
  date -u +"$spec %T" >>"$W/times.txt"
  timeout --signal=INT --kill-after=20 "$left" build-carry/bin/tilepath sweep \
    "bench/results/wgmma-compute-side/regen-specs/$spec.json" --backend cuda --db "$W/regen.sqlite" >>"$W/regen.log" 2>&1
  echo "  rc=$? $(tail -n 1 "$W/regen.log")" >>"$W/times.txt"
done
python3 - "$W/regen.sqlite" >"$W/regen-summary.txt" 2>&1 <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
c.execute("PRAGMA journal_mode=DELETE")
print("cases by status and mma:", c.execute("SELECT status, mma, COUNT(*) FROM cases GROUP BY 1, 2").fetchall())
print("cases with compute_only:", c.execute(
    "SELECT COUNT(DISTINCT case_id) FROM measurements WHERE name = 'tile_interval_compute_only_us'").fetchone()[0])
PY

# The GPU tests in the time left (94 s on an H100); a run cut short keeps its log.
if [ "$(left_in_call)" -gt 40 ]; then
  date -u +"gpu tests %T" >>"$W/times.txt"
  timeout "$(left_in_call)" build-carry/gpu-tests/cuda_gpu_tests --gtest_output=xml:"$W/gpu-tests.xml" \
    >"$W/gpu-tests.log" 2>&1
  echo "  rc=$? $(tail -n 1 "$W/gpu-tests.log")" >>"$W/times.txt"
else
  echo "gpu tests not run: $SECONDS s elapsed" >>"$W/times.txt"
fi
date -u +"done %T" >>"$W/times.txt"
cat "$W/times.txt" "$W/regen-summary.txt"
tar cJf "$OUT/call.tar.xz" -C "$W" .
