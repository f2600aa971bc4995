#!/usr/bin/env bash
# Call 4 of bench/results/wgmma-cluster/: the file of record again with the cluster launch
# policy of cb47184, as bench/results/floor-vs-paged-read/call.sh. From the repository root on
# the H200, with build-carry/ holding bin/tilepath, bin/paged_read_bound (with --list) and the
# plugins of this tree: every row of bench/peers.py (bench/results/h200-peers.json), each row
# that paged_read_bound compiles in beside the paged read of its bytes at the fastest of its
# compiled split counts. Everything comes back in $OUT/call.tar.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$W/smi.txt" 2>&1
date -u +"peers %T" >> "$W/times.txt"
OUT=$W/peers BUILD=build-carry PEERS_SECONDS=${PEERS_SECONDS:-420} bash backends/cuda/scripts/device_run.sh peers \
  > "$W/peers.log" 2>&1
echo "peers rc=$?" >> "$W/times.txt"
date -u +"done %T" >> "$W/times.txt"
tar cJf "$OUT/call.tar.xz" -C "$W" .
cat "$W/times.txt"
