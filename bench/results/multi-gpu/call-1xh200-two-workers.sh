#!/usr/bin/env bash
# bench/multi_gpu.py on a one-GPU H200 host with the job array's two shards at once (two
# workers on one GPU, what issue 22 asks for before a several-GPU host is lent), then the GPU
# tests of the build; from the repository root with the build in build-carry/. Everything
# comes back in $OUT/call.tar.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
export TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins TILEPATH_MODELS_DIR=$PWD/models PATH=$PATH:/usr/local/cuda/bin
{ date -u; nvidia-smi -L; build-carry/bin/tilepath backends; } > "$W/backends.txt" 2>&1
date -u +"multi_gpu %T" >> "$W/times.txt"
python3 bench/multi_gpu.py --tilepath build-carry/bin/tilepath --backend cuda --spec bench/floor-targets.json \
  --work "$W/multi-gpu" --out "$W/multi-gpu-1xh200-two-workers.json" --shards 2 --shards-at-once \
  > "$W/multi-gpu.log" 2>&1
echo "multi_gpu rc=$? $(date -u +%T)" >> "$W/times.txt"
build-carry/gpu-tests/cuda_gpu_tests > "$W/gpu-tests.log" 2>&1
echo "gpu tests rc=$? $(date -u +%T)" >> "$W/times.txt"
for f in "$W"/multi-gpu/*.sqlite; do xz -T0 "$f"; done
tar cJf "$OUT/call.tar.xz" -C "$W" .
