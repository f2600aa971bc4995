#!/usr/bin/env bash
# Call 2 of bench/results/wgmma-ring/: from the repository root on the H200, with call 1's build
# in build-carry/ (bin/tilepath and the CUDA plugin): the peers rows of bench/peers.py that call 1
# did not run (the rows without a paged bound). Everything comes back in $OUT/call.tar.xz and
# $OUT/h200-peers-rest.json.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
date -u +"peers %T" >> "$W/times.txt"
OUT=$W/peers BUILD=build-carry PEERS_SECONDS=${PEERS_SECONDS:-520} \
  PEERS_SHAPES="64,4096,32,8,128 16,32768,32,8,128 4,65536,32,8,128 128,2048,32,8,128 64,4096,32,8,64 64,4096,32,8,256 64,4096,64,8,128 64,4096,32,32,128" \
  bash backends/cuda/scripts/device_run.sh peers > "$W/peers.log" 2>&1
echo "peers rc=$?" >> "$W/times.txt"
cp "$W/peers/h200-peers.json" "$OUT/h200-peers-rest.json" 2>/dev/null
date -u +"done %T" >> "$W/times.txt"
tar cJf "$OUT/call.tar.xz" -C "$W" .
