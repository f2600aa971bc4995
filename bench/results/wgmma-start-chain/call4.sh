#!/usr/bin/env bash
# Call 4 of bench/results/wgmma-start-chain/: the trace of call 3's change beside this tree's,
# from the repository root on the H200. Two trace plugins (the K8/V8 wgmma kernels, the two-head
# ones and the combine compiled with -DTILEPATH_KERNEL_TRACE): build-carry/trace-current/ (this
# tree) and build-carry/trace-change/ (c325e9c with call3/change.diff applied and this
# tree's wgmma_launch.cuh, which prints the start's stamps). One `tilepath run` per shape and
# plugin, fp8_qk/k_only on wgmma, HBM-cold. Everything comes back in $OUT/call.tar.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$W/smi.txt" 2>&1
export TILEPATH_MODELS_DIR=$PWD/models
for arm in trace-current trace-change; do
  for shape in 1,32768,32,8,128 64,4096,32,8,64 16,32768,32,8,128; do
    IFS=, read -r b s hq hk d <<< "$shape"
    name=$arm-b${b}-s${s}-${hq}-${hk}-d${d}
    date -u +"$name %T" >> "$W/times.txt"
    TILEPATH_PLUGIN_PATH=$PWD/build-carry/$arm timeout 150 build-carry/bin/tilepath run --backend cuda --kv k8v8 \
      --k-path fp8_qk --mode k_only --mma wgmma --batch "$b" --context "$s" --q-heads "$hq" --kv-heads "$hk" \
      --head-dim "$d" --page-size 16 --cache hbm_cold --repeats 3 --warmup 1 --no-ablations --json \
      --db "$W/trace.sqlite" > "$W/trace-$name.txt" 2> "$W/trace-$name.err"
    echo "$name rc=$? lines $(grep -c '^TR ' "$W/trace-$name.txt")" >> "$W/times.txt"
    python3 bench/kernel_trace.py "$W/trace-$name.txt" >> "$W/summary.txt" 2>&1
    rm -f "$W/trace-$name.txt"
  done
done
rm -f "$W/trace.sqlite"
tar cJf "$OUT/call.tar.xz" -C "$W" .
