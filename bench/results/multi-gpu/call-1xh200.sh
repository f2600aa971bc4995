#!/usr/bin/env bash
# bench/multi_gpu.py on a one-GPU H200 host (issue 22's harness before a several-GPU host is
# lent), the GPU tests of the build, and the sanitize step on every kernel family; from the
# repository root with the build in build-carry/. Everything comes back in $OUT/call.tar.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
export TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins TILEPATH_MODELS_DIR=$PWD/models PATH=$PATH:/usr/local/cuda/bin
{ date -u; nvidia-smi -L; build-carry/bin/tilepath backends; } > "$W/backends.txt" 2>&1
python3 bench/multi_gpu.py --tilepath build-carry/bin/tilepath --backend cuda --spec bench/floor-targets.json \
  --work "$W/multi-gpu" --out "$OUT/multi-gpu-1xh200.json" --shards 2 > "$W/multi-gpu.log" 2>&1
echo "multi_gpu rc=$?" >> "$W/times.txt"
date -u +"gpu tests %T" >> "$W/times.txt"
build-carry/gpu-tests/cuda_gpu_tests > "$W/gpu-tests.log" 2>&1
echo "gpu tests rc=$?" >> "$W/times.txt"
date -u +"sanitize %T" >> "$W/times.txt"
OUT=$W/san BUILD=build-carry timeout 300 bash backends/cuda/scripts/device_run.sh sanitize > "$W/sanitize.log" 2>&1
echo "sanitize rc=$? $(date -u +%T)" >> "$W/times.txt"
for f in "$W"/multi-gpu/*.sqlite; do xz -T0 "$f"; done
tar cJf "$OUT/call.tar.xz" -C "$W" .
