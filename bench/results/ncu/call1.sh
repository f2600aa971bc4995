#!/usr/bin/env bash
# One device call: ncu's CSV of every kernel family's main kernel (mma.sync and wgmma, plain
# and prebias K) at B=64, S=4096, cold; the kernel-by-kernel breakdown of the peers file's
# K8/V8 variant at the split-KV shapes and B=64; `tilepath run --profile` of a wgmma case end
# to end; then, while time is left, compute-sanitizer on the mma.sync sanitize cases.
# From the repository root on the H200, with the build in build-carry/:
#   OUT=$OUT bash bench/results/ncu/call1.sh
set -u
W=$OUT/work
mkdir -p "$W"
export BUILD=build-carry
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.draw,temperature.gpu --format=csv
  date -u
} >"$W/smi.txt" 2>&1
OUT=$W bash backends/cuda/scripts/device_run.sh ncu breakdown >"$W/ncu-breakdown.log" 2>&1
echo "ncu + breakdown done at $SECONDS s"

# --profile on a wgmma case: the child ncu selects the wgmma main kernel and the case stores
# its ncu_* measurements and the CSV.
export TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins TILEPATH_MODELS_DIR=$PWD/models PATH=$PATH:/usr/local/cuda/bin
build-carry/bin/tilepath run --backend cuda --db "$W/profile.sqlite" --kv k8v8 --k-path fp8_qk --mode k_only \
  --mma wgmma --batch 16 --context 4096 --q-heads 32 --kv-heads 8 --head-dim 128 --page-size 16 --profile --json \
  >"$W/profile-wgmma.json" 2>"$W/profile-wgmma.err"
echo "profile rc=$? at $SECONDS s"

# The mma.sync sanitize cases (every case line that does not end in --mma wgmma), while the
# call has time left for them (about 4 minutes).
if [ "$SECONDS" -lt 300 ]; then
  # A folder of its own: each device_run.sh call writes its logs.tar.gz over the last one's.
  OUT=$W/sanitize SANITIZE_MATCH='--head-dim (64|128|256)$' bash backends/cuda/scripts/device_run.sh sanitize \
    >"$W/sanitize.log" 2>&1
  echo "sanitize done at $SECONDS s"
else
  echo "sanitize not run: $SECONDS s elapsed"
fi
tar cf - -C "$OUT" work | xz -6 -T4 >"$OUT/call.tar.xz"
