#!/usr/bin/env bash
# One device call of bench/results/h100-model-check/ on an H100 SXM: the GPU-model probe
# (backends/sim/calibration/gpu_probe.cu, twice) and the bundled grid's mma.sync kernels,
# latency only (h100-cuda-check.json), bounded by SWEEP_SECONDS (default 280).
# From the repository root, with the build in build-carry/ (bin/tilepath, bin/gpu_probe, plugins):
#   OUT=$OUT bash bench/results/h100-model-check/call.sh
# Everything comes back under $OUT/h100/.
set -u
OUT=${OUT:-out}
H=$OUT/h100
mkdir -p "$H"
export TILEPATH_MODELS_DIR=$PWD/models TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,memory.total,temperature.gpu,power.draw \
  --format=csv >"$H/smi.txt" 2>&1
date -u +"probe %T" >"$H/times.txt"
for run in 1 2; do
  echo "## run $run"
  build-carry/bin/gpu_probe
done >"$H/gpu_probe.txt" 2>&1
{
  date -u +"sweep %T"
  timeout --signal=INT --kill-after=20 "${SWEEP_SECONDS:-280}" build-carry/bin/tilepath sweep \
    bench/results/h100-model-check/h100-cuda-check.json --backend cuda --db "$H/h100-check.sqlite" >"$H/sweep.log" 2>&1
  echo "  rc=$? $(tail -n 1 "$H/sweep.log")"
  python3 - "$H/h100-check.sqlite" 2>&1 <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
c.execute("PRAGMA journal_mode=DELETE")
print("cases by status and kv:", c.execute("SELECT status, kv, COUNT(*) FROM cases GROUP BY 1, 2").fetchall())
PY
  date -u +"done %T"
} >>"$H/times.txt"
cat "$H/times.txt" "$H/gpu_probe.txt"
