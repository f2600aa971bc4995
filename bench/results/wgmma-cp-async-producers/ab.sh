#!/usr/bin/env bash
# The A/B of bench/results/wgmma-cp-async-producers/: the cp.async ring's producer in three
# builds, each arm X running the plugins of build-carry/plugins-cp-async-X:
#   base   the producer of bench/results/wgmma-cp-async-ring/ (one warp, two shuffles, a select
#          and the swizzle worked out per chunk)
#   lean1  the producer of this folder (one shuffle and one multiply-add per chunk, the swizzle
#          per lane), one warp
#   lean2  the same, two producer warps (K and V each a warp's) in the one-head kernels, their
#          registers held to the plan's CTAs per SM
# K8/V8, Hq/Hk 32/8, D = 128, 1-token pages, cold, `tilepath run` (30 timed launches, no
# ablations), each run its own process with its own read bandwidth, ROUNDS rounds (default 3),
# the arms' order rotating by round. ab-summary.txt (also printed): each arm's latencies, the
# median, x its byte floor, and lean1 / base, lean2 / base. From the repository root on the GPU
# machine, given BUDGET s (default 200):
#   OUT=$OUT bash bench/results/wgmma-cp-async-producers/ab.sh
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W/ab"
export TILEPATH_MODELS_DIR=$PWD/models
deadline=$(($(date +%s) + ${BUDGET:-200}))
left() { local l=$((deadline - $(date +%s))); echo $((l < 1 ? 1 : l)); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$W/smi.txt" 2>&1

# shape = batch context k_path
shapes=("1 32768 fp8_qk" "32 32768 fp8_qk" "64 4096 fp8_qk" "1 4096 fp8_qk" "32 4096 fp8_qk" "64 32768 fp8_qk"
  "64 4096 transform" "32 32768 transform")
arms=(base lean1 lean2)
date -u +"a/b %T" >> "$W/times.txt"
for round in $(seq 1 "${ROUNDS:-3}"); do
  for s in "${shapes[@]}"; do
    read -r batch context path <<< "$s"
    for i in 0 1 2; do
      arm=${arms[$(((i + round) % 3))]}
      f=$W/ab/r$round-b$batch-s$context-$path-$arm.json
      limit=$(left)
      [ "$limit" -le 5 ] && continue
      [ "$limit" -gt 60 ] && limit=60
      TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins-cp-async-$arm timeout "$limit" build-carry/bin/tilepath run \
        --backend cuda --db "$W/ab-$arm.sqlite" --kv k8v8 --k-path "$path" --mode k_only --mma wgmma \
        --batch "$batch" --context "$context" --q-heads 32 --kv-heads 8 --head-dim 128 --page-size 1 \
        --cache hbm_cold --no-ablations --repeats 30 --json > "$f" 2> "$f.err"
      echo "round $round b$batch s$context $path $arm rc=$?" >> "$W/times.txt"
    done
  done
done

python3 - "$W/ab" > "$W/ab-summary.txt" 2>&1 <<'PY'
import collections, glob, json, os, statistics, sys
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    name = os.path.basename(path)[:-5]
    _, batch, context, k_path, arm = name.split("-")
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
    k = d.get("kernel", {})
    rows[(batch[1:], context[1:], k_path)][arm].append((m["latency_us"], m["latency_us"] / floor_us, k.get("name"),
                                                 k.get("regs_per_thread"), k.get("block", [0])[0], m.get("blocks_per_sm")))
print("shape                 arm    kernel (regs, threads, CTAs per SM)                     latency us (rounds)   median  x floor")
for key, arms in sorted(rows.items(), key=lambda kv: (kv[0][2], int(kv[0][0]), int(kv[0][1]))):
    med = {}
    for arm, runs in sorted(arms.items()):
        med[arm] = statistics.median(r[0] for r in runs)
        print(f"B={key[0]} S={key[1]} {key[2]:9} {arm:6} {runs[0][2]} ({runs[0][3]}, {runs[0][4]}, {runs[0][5]})  "
              f"{' '.join(f'{r[0]:.1f}' for r in runs):21} {med[arm]:7.1f} {statistics.median(r[1] for r in runs):.3f}")
    for arm in ("lean1", "lean2"):
        if arm in med and "base" in med:
            print(f"{'':29} {arm} / base: {med[arm] / med['base']:.3f}")
PY
date -u +"done %T" >> "$W/times.txt"
cat "$W/ab-summary.txt"
tar cJf "$OUT/ab.tar.xz" -C "$W" .
