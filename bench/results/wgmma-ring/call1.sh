#!/usr/bin/env bash
# Call 1 of bench/results/wgmma-ring/: from the repository root on the H200, with the build of
# the committed tree in build-carry/ (bin/ and the CUDA plugin in plugins/) and, in
# build-carry/trace-plugins/, its CUDA plugin with the K8/V8 wgmma kernels and their load_only
# compiled with -DTILEPATH_KERNEL_TRACE. In order: the ring's trace (full kernel and load_only
# of one `tilepath run` with its ablations) at the shapes below; the peers rows that carry the
# paged bound; compute-sanitizer on the wgmma cases (at most 240 s). Everything comes back in $OUT/call.tar.xz
# and $OUT/h200-peers-b1.json.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
export TILEPATH_MODELS_DIR=$PWD/models PATH=$PATH:/usr/local/cuda/bin
stamp() { date -u +"$1 %T" >> "$W/times.txt"; }

export TILEPATH_PLUGIN_PATH=$PWD/build-carry/trace-plugins
for c in 64,4096,32,8,k_only 128,2048,32,8,k_only 128,2048,32,8,full 16,32768,32,8,k_only 4,65536,32,8,k_only \
         1,32768,32,8,k_only; do
  IFS=, read -r b s hq hk mode <<< "$c"
  name=b$b-s$s-$hq-$hk-$mode
  stamp "trace $name"
  timeout 120 build-carry/bin/tilepath run --backend cuda --kv k8v8 --k-path fp8_qk --mode "$mode" --mma wgmma \
    --batch "$b" --context "$s" --q-heads "$hq" --kv-heads "$hk" --head-dim 128 --page-size 16 --cache hbm_cold \
    --repeats 1 --warmup 0 --json --db "$W/trace.sqlite" > "$W/trace-$name.txt" 2> "$W/trace-$name.err"
  echo "$name rc=$? TR $(grep -c '^TR ' "$W/trace-$name.txt") TW $(grep -c '^TW ' "$W/trace-$name.txt")" >> "$W/times.txt"
  gzip -9 "$W/trace-$name.txt"
done
rm -f "$W/trace.sqlite"
python3 bench/kernel_trace.py "$W"/trace-*.txt.gz > "$W/trace-summary.txt" 2>&1


export TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins
stamp "peers"
OUT=$W/peers BUILD=build-carry PEERS_SECONDS=200 PEERS_SHAPES="1,32768,32,8,128 1,32768,8,1,128 32,32768,8,1,128" \
  bash backends/cuda/scripts/device_run.sh peers > "$W/peers.log" 2>&1
echo "peers rc=$?" >> "$W/times.txt"
cp "$W/peers/h200-peers.json" "$OUT/h200-peers-b1.json" 2>/dev/null

stamp "sanitize"
OUT=$W/san BUILD=build-carry SANITIZE_MATCH=wgmma timeout 240 bash backends/cuda/scripts/device_run.sh sanitize \
  > "$W/sanitize.log" 2>&1
echo "sanitize rc=$?" >> "$W/times.txt"
stamp "done"
tar cJf "$OUT/call.tar.xz" -C "$W" .
