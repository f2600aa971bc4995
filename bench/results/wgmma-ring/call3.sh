#!/usr/bin/env bash
# Call 3 of bench/results/wgmma-ring/: from the repository root on the H200, with bin/tilepath in
# build-carry/ and, in build-carry/trace-plugins/, the CUDA plugin whose K8/V8 wgmma kernels and
# their load_only are compiled with -DTILEPATH_KERNEL_TRACE, now with the work's parts (qk,
# softmax, v_prep, the rest). One `tilepath run` per case, no ablations. Everything comes back in
# $OUT/call.tar.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
export TILEPATH_MODELS_DIR=$PWD/models TILEPATH_PLUGIN_PATH=$PWD/build-carry/trace-plugins
for c in 1,32768,32,8,fp8_qk,k_only 1,32768,8,1,fp8_qk,k_only 128,2048,32,8,fp8_qk,k_only 128,2048,32,8,fp8_qk,full \
         64,4096,32,8,fp8_qk,k_only 16,32768,32,8,fp8_qk,k_only 128,2048,32,8,transform,k_only; do
  IFS=, read -r b s hq hk kpath mode <<< "$c"
  name=b$b-s$s-$hq-$hk-$kpath-$mode
  date -u +"trace $name %T" >> "$W/times.txt"
  timeout 100 build-carry/bin/tilepath run --backend cuda --kv k8v8 --k-path "$kpath" --mode "$mode" --mma wgmma \
    --batch "$b" --context "$s" --q-heads "$hq" --kv-heads "$hk" --head-dim 128 --page-size 16 --cache hbm_cold \
    --repeats 1 --warmup 0 --no-ablations --json --db "$W/trace.sqlite" > "$W/trace-$name.txt" 2> "$W/trace-$name.err"
  echo "$name rc=$? TW $(grep -c '^TW ' "$W/trace-$name.txt")" >> "$W/times.txt"
  gzip -9 "$W/trace-$name.txt"
done
rm -f "$W/trace.sqlite"
python3 bench/kernel_trace.py "$W"/trace-*.txt.gz > "$W/trace-summary.txt" 2>&1
tar cJf "$OUT/call.tar.xz" -C "$W" .
