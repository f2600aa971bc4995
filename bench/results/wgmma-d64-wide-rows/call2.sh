#!/usr/bin/env bash
# Call 2 of bench/results/wgmma-d64-wide-rows/: from the repository root on the H200, with
# build-carry/ holding bin/tilepath, bin/paged_read_bound, the plugins and gpu-tests/ of the
# change (the two-head D = 64 kernels reading both heads' rows with one TMA box, and the policy
# taking them at every D = 64 K8/V8 shape):
#  1. every row of bench/peers.py (the file of record, bench/results/h200-peers.json);
#  2. the D = 64 wgmma cases of the bundled grid (grid-d64-wgmma.json, beside this script) into
#     a new database, to replace those cases of data/h200-sweep.sqlite;
#  3. the whole GPU test suite (the split policy's tests run the new policy here first).
# Everything comes back in $OUT/call.tar.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
date -u +"peers %T" >> "$W/times.txt"
OUT=$W/peers BUILD=build-carry PEERS_SECONDS=300 bash backends/cuda/scripts/device_run.sh peers > "$W/peers.log" 2>&1
echo "peers rc=$?" >> "$W/times.txt"
date -u +"regen %T" >> "$W/times.txt"
OUT=$W/regen BUILD=build-carry SWEEP_SECONDS=150 SWEEP_SPEC=bench/results/wgmma-d64-wide-rows/grid-d64-wgmma.json \
  bash backends/cuda/scripts/device_run.sh sweep > "$W/regen.log" 2>&1
echo "regen rc=$?" >> "$W/times.txt"
date -u +"tests %T" >> "$W/times.txt"
TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins TILEPATH_MODELS_DIR=$PWD/models build-carry/gpu-tests/cuda_gpu_tests \
  > "$W/gpu-tests.log" 2>&1
echo "gpu tests rc=$?" >> "$W/times.txt"
date -u +"done %T" >> "$W/times.txt"
tar cJf "$OUT/call.tar.xz" -C "$W" .
cat "$W/times.txt"
