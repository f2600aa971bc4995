#!/usr/bin/env bash
# Call 5 of bench/results/wgmma-cluster/: compute-sanitizer's four tools on the wgmma cases of
# backends/cuda/scripts/device_run.sh's sanitize step with every grid launched in pairs of kv
# heads (TILEPATH_CUDA_WGMMA_CLUSTER=2: those small cases run one wave, where the policy itself
# launches no clusters). From the repository root on the H200 with the build of this tree in
# build-carry/. Everything comes back in $OUT/call.tar.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
export PATH=$PATH:/usr/local/cuda/bin
date -u +"sanitize %T" >> "$W/times.txt"
TILEPATH_CUDA_WGMMA_CLUSTER=2 OUT=$W/san BUILD=build-carry SANITIZE_MATCH=wgmma timeout 420 \
  bash backends/cuda/scripts/device_run.sh sanitize > "$W/sanitize.log" 2>&1
echo "sanitize rc=$? $(date -u +%T)" >> "$W/times.txt"
tar xzf "$W/san/logs.tar.gz" -C "$W/san" 2>/dev/null
cp "$W/times.txt" "$W/sanitize.log" "$OUT/"
tar cJf "$OUT/call.tar.xz" -C "$W" .
