#!/usr/bin/env bash
# Call 2 of bench/results/wgmma-cp-async-ring/: what the cp.async ring costs. With build-carry/
# as for call1.sh, from the repository root on the H200; K8/V8, Hq/Hk 32/8, D = 128:
#   1. wgmma-vs-mma-sync-load-only-page1.json: fp8_qk k_only at the grid's 1-token-page shapes
#      on both matrix instruction families in one process, each kernel beside its load_only,
#      both caches (the A/B docs/performance.md reads where wgmma is slower than mma.sync), into
#      ab-page1.sqlite;
#   2. pairs of arms, `k_only`, cold, four rounds of `tilepath run` (30 timed launches, no
#      ablations), each run its own process with its own read bandwidth, the pair's order
#      alternating by round; ab-summary.txt (also printed) has each arm's medians and the ratio:
#      the two rings at 16-token pages, the TMA kernels (tma) against
#      TILEPATH_CUDA_WGMMA_RING=cp_async (cp_async), at four shapes. An arm X other than tma and
#      cp_async runs the plugins of build-carry/plugins-cp-async-X (another build), so a pair
#      "B S k_path page X Y" compares two builds; the calls of the README did so at 1-token
#      pages (elect/lanes in e3b4495's form of this script, onetile/ahead in da873ab's).
# Every step gets what is left of 500 s, so that the archive is written inside a 600-s call.
# Everything comes back in $OUT/call.tar.xz.
#   OUT=$OUT bash bench/results/wgmma-cp-async-ring/call2.sh
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
export TILEPATH_MODELS_DIR=$PWD/models TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins-cp-async
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$W/smi.txt" 2>&1

deadline=$(($(date +%s) + 500))
left() { local l=$((deadline - $(date +%s))); echo $((l < 1 ? 1 : l)); }
at_most() { local l; l=$(left); echo $((l < $1 ? l : $1)); }

date -u +"load_only a/b at 1-token pages %T" >> "$W/times.txt"
timeout --signal=INT --kill-after=20 "$(at_most 220)" build-carry/bin/tilepath sweep \
  bench/results/wgmma-cp-async-ring/wgmma-vs-mma-sync-load-only-page1.json --backend cuda \
  --db "$W/ab-page1.sqlite" > "$W/ab-page1.log" 2>&1
echo "  rc=$? $(tail -n 1 "$W/ab-page1.log")" >> "$W/times.txt"

# pair = batch context k_path page armA armB; the arms' order alternates by round.
pairs=("64 4096 fp8_qk 16 tma cp_async" "16 32768 fp8_qk 16 tma cp_async" "1 32768 fp8_qk 16 tma cp_async"
  "64 4096 transform 16 tma cp_async")
date -u +"a/b %T" >> "$W/times.txt"
mkdir -p "$W/ab"
for round in 1 2 3 4; do
  for s in "${pairs[@]}"; do
    read -r batch context path page arm_a arm_b <<< "$s"
    arms="$arm_a $arm_b"
    [ $((round % 2)) -eq 0 ] && arms="$arm_b $arm_a"
    for arm in $arms; do
      ring='' plugins=$PWD/build-carry/plugins-cp-async
      [ "$arm" = cp_async ] && ring=cp_async
      [ -d "build-carry/plugins-cp-async-$arm" ] && plugins=$PWD/build-carry/plugins-cp-async-$arm
      f=$W/ab/r$round-b$batch-s$context-$path-p$page-$arm.json
      limit=$(at_most 60)
      [ "$limit" -le 5 ] && continue
      TILEPATH_CUDA_WGMMA_RING=$ring TILEPATH_PLUGIN_PATH=$plugins timeout "$limit" build-carry/bin/tilepath run \
        --backend cuda --db "$W/ab-$arm.sqlite" --kv k8v8 --k-path "$path" --mode k_only --mma wgmma \
        --batch "$batch" --context "$context" --q-heads 32 --kv-heads 8 --head-dim 128 --page-size "$page" \
        --cache hbm_cold --no-ablations --repeats 30 --json > "$f" 2> "$f.err"
      echo "round $round b$batch s$context $path p$page $arm rc=$?" >> "$W/times.txt"
    done
  done
done

python3 - "$W/ab" > "$W/ab-summary.txt" 2>&1 <<'PY'
import collections, glob, json, os, statistics, sys
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    name = os.path.basename(path)[:-5]
    _, batch, context, k_path, page, arm = name.split("-")
    try:
        d = json.load(open(path))
    except ValueError as e:
        print(f"{name}: no JSON ({e})")
        continue
    m = d.get("measurements", {})
    if d.get("status") != "ok" or "latency_us" not in m:
        print(f"{name}: status {d.get('status')} {d.get('message', '')}")
        continue
    floor_us = m["bytes_moved"] / (m["read_bandwidth_gbps"] * 1e3)
    rows[(batch, context, k_path, page)][arm].append((m["latency_us"], m["latency_us"] / floor_us, d["kernel"]["name"]))
print("shape                      page  arm        kernel                                         latency us (rounds)   median  x floor")
for key, arms in sorted(rows.items()):
    med = {}
    for arm, runs in sorted(arms.items()):
        med[arm] = statistics.median(r[0] for r in runs)
        print(f"{' '.join(key[:3]):26} {key[3]:5} {arm:10} {runs[0][2]:46} {' '.join(f'{r[0]:.1f}' for r in runs):21} "
              f"{med[arm]:7.1f} {statistics.median(r[1] for r in runs):.3f}")
    for pair in (("cp_async", "tma"), ("lanes", "elect"), ("ahead", "onetile")):
        if all(a in med for a in pair):
            print(f"{'':32} {pair[0]} / {pair[1]}: {med[pair[0]] / med[pair[1]]:.3f}")
PY

date -u +"done %T" >> "$W/times.txt"
cat "$W/times.txt" "$W/ab-summary.txt"
tar cJf "$OUT/call.tar.xz" -C "$W" .
