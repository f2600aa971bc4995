#!/usr/bin/env bash
# The start's steps again with two more stamps (the producer's first instruction, its first copy
# about to be issued), HBM-cold and L2-warm, in two trace builds: as committed
# (build-carry/trace-plugins/) and with the producer's lane 0 issuing prefetch.tensormap for both
# maps before the grid-dependency wait (build-carry/trace-plugins-prefetch/, the experiment's
# -DTILEPATH_EXPERIMENT_PREFETCH_TENSORMAP). From the repository root on the H200; everything
# comes back in $OUT/call.tar.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$W/smi.txt" 2>&1
export TILEPATH_MODELS_DIR=$PWD/models
for arm in trace-plugins trace-plugins-prefetch; do
  for cache in hbm_cold l2_warm; do
    for shape in 1,32768,32,8 64,4096,32,8 128,1024,32,8; do
      IFS=, read -r b s hq hk <<< "$shape"
      name=$arm-$cache-b${b}-s${s}-${hq}-${hk}
      date -u +"$name %T" >> "$W/times.txt"
      TILEPATH_PLUGIN_PATH=$PWD/build-carry/$arm timeout 150 build-carry/bin/tilepath run --backend cuda --kv k8v8 \
        --k-path fp8_qk --mode k_only --mma wgmma --batch "$b" --context "$s" --q-heads "$hq" --kv-heads "$hk" \
        --head-dim 128 --page-size 16 --cache "$cache" --repeats 3 --warmup 1 --no-ablations --json \
        --db "$W/trace.sqlite" > "$W/trace-$name.txt" 2> "$W/trace-$name.err"
      echo "$name rc=$? lines $(grep -c '^TR ' "$W/trace-$name.txt")" >> "$W/times.txt"
      gzip -9 "$W/trace-$name.txt"
    done
  done
done
python3 bench/kernel_trace.py "$W"/trace-*.txt.gz > "$W/summary.txt" 2>&1
rm -f "$W/trace.sqlite"
tar cJf "$OUT/call.tar.xz" -C "$W" .
