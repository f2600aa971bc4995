#!/usr/bin/env bash
# bench/peers.py again, twice, at the two rows whose verdicts sit at the target's line in the
# file of record (bench/results/h200-peers.json of 2026-12-04 20:51 UTC): B=1 S=32768 Hq/Hk 32/8
# (>= 0.90 of the paged split-read + merge bound; 0.893 there) and B=64 S=4096 (>= 1.9x faster
# than cuDNN BF16 SDPA; 1.891x there). No kernel changed since that call: this measures how far
# those verdicts move between calls, not a new kernel. Each round is its own peers.py process.
# From the repository root on the H200, with the build and bench/paged_read_bound in build-carry/:
#   OUT=$OUT bash bench/results/peers-repeat/call1.sh
set -u
export BUILD=build-carry
mkdir -p "$OUT"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.draw,temperature.gpu --format=csv
  date -u
} >"$OUT/smi.txt" 2>&1
for round in 1 2; do
  # A folder per round: each device_run.sh call writes its logs.tar.gz over the last one's.
  W=$OUT/round$round
  mkdir -p "$W"
  PEERS_SHAPES="1,32768,32,8,128 64,4096,32,8,128" PEERS_SECONDS=200 OUT=$W \
    bash backends/cuda/scripts/device_run.sh peers >"$W/peers-step.log" 2>&1
  echo "round $round rc=$? at $SECONDS s"
done
