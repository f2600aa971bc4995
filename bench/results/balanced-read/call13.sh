#!/usr/bin/env bash
# Call 13 of bench/results/balanced-read/: the bundled fp8_qk/k_only wgmma kernel at B = 64
# S = 4096 and B = 128 S = 2048 with the split count forced (`--splits`), so that a second wave
# of CTAs (half or a third of a stream each) goes to whichever SMs free up first. From the
# repository root on the H200 with the build of this tree in build-carry/; every run HBM-cold,
# 30 repeats; two rounds of opposite order. Lines of summary.txt: shape, splits, latency us,
# x floor, round.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
nvidia-smi > "$W/smi.txt" 2>&1
export TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins TILEPATH_MODELS_DIR=$PWD/models
runs="64,4096,1 64,4096,2 64,4096,3 64,4096,4 128,2048,1 128,2048,2 128,2048,3 128,2048,4"
reversed=$(echo $runs | tr ' ' '\n' | tac | tr '\n' ' ')
for round in 1 2; do
  list=$runs; [ $round = 2 ] && list=$reversed
  for r in $list; do
    IFS=, read -r b s splits <<< "$r"
    name=r$round-b$b-s$s-x$splits
    timeout 120 build-carry/bin/tilepath run --backend cuda --kv k8v8 --k-path fp8_qk --mode k_only --mma wgmma \
      --batch "$b" --context "$s" --q-heads 32 --kv-heads 8 --head-dim 128 --page-size 16 --cache hbm_cold \
      --splits "$splits" --repeats 30 --warmup 5 --no-ablations --json --db "$W/runs.sqlite" \
      > "$W/$name.json" 2> "$W/$name.err"
    python3 -c "
import json, sys
j = json.load(open('$W/$name.json')); m = j['measurements']
print('B=$b S=$s splits $splits', j['status'], round(m['latency_us'], 2), round(1 / m['floor_fraction'], 4), 'round $round')
" >> "$W/summary.txt" 2>&1
  done
done
cp "$W/summary.txt" "$OUT/summary.txt"
tar cJf "$OUT/call.tar.xz" -C "$W" --exclude runs.sqlite .
