#!/usr/bin/env bash
# The steps of a wgmma CTA's start (bench/results/wgmma-start-chain/): from the repository root
# on the H200, with the plugin whose K8/V8 wgmma kernels and combine were compiled with
# -DTILEPATH_KERNEL_TRACE in build-carry/trace-plugins/ (the rest of the build in build-carry/).
# One `tilepath run` per shape, fp8_qk/k_only on wgmma, HBM-cold; every launch prints a line per
# CTA, bench/kernel_trace.py keeps the last launch. Everything comes back in $OUT/call.tar.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$W/smi.txt" 2>&1
export TILEPATH_PLUGIN_PATH=$PWD/build-carry/trace-plugins TILEPATH_MODELS_DIR=$PWD/models
for shape in 1,32768,32,8 1,32768,8,1 128,2048,32,8 128,1024,32,8 64,4096,32,8 16,32768,32,8; do
  IFS=, read -r b s hq hk <<< "$shape"
  name=b${b}-s${s}-${hq}-${hk}
  date -u +"$name %T" >> "$W/times.txt"
  timeout 150 build-carry/bin/tilepath run --backend cuda --kv k8v8 --k-path fp8_qk --mode k_only --mma wgmma \
    --batch "$b" --context "$s" --q-heads "$hq" --kv-heads "$hk" --head-dim 128 --page-size 16 --cache hbm_cold \
    --repeats 3 --warmup 1 --no-ablations --json --db "$W/trace.sqlite" > "$W/trace-$name.txt" 2> "$W/trace-$name.err"
  echo "$name rc=$? lines $(grep -c '^TR ' "$W/trace-$name.txt")" >> "$W/times.txt"
  gzip -9 "$W/trace-$name.txt"
done
python3 bench/kernel_trace.py "$W"/trace-*.txt.gz > "$W/summary.txt" 2>&1
rm -f "$W/trace.sqlite"
tar cJf "$OUT/call.tar.xz" -C "$W" .
