#!/usr/bin/env bash
# Call 1 of bench/results/splits/empty-split/: the split policy that launches only the splits
# holding tokens (branch empty-split, bench/results/splits/empty-split/policy.diff) against the
# policy of main, and the GPU tests under the new policy. From the repository root on the H200,
# with build-carry/ holding:
#   bin/tilepath, gpu-tests/cuda_gpu_tests  built with policy.diff applied;
#   plugins/                                the plugins of main (the policy of the bundled cases);
#   plugins-nonempty/                       the plugins with policy.diff (the same cubins).
# A/B: four alternating rounds of `tilepath run` (cold, 30 timed launches, no ablations), each
# its own process with its own read bandwidth, at the B = 1 shapes whose launch the policy
# changes. Everything comes back in $OUT/call.tar.xz; the summary is also printed.
#   OUT=$OUT bash bench/results/splits/empty-split/call1.sh
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
export TILEPATH_MODELS_DIR=$PWD/models PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$W/smi.txt" 2>&1

# Each step gets what is left of 500 s, so that the archive is written inside a 600-s call.
deadline=$(($(date +%s) + 500))
left() { local l=$((deadline - $(date +%s))); echo $((l < 1 ? 1 : l)); }

# SKIP_GPU_TESTS=1: the suite of another build under the same policy has run in its place
# (bench/results/wgmma-cp-async-ring/call1.sh: main's tests and more, with policy.diff).
if [ "${SKIP_GPU_TESTS:-0}" != 1 ]; then
  date -u +"gpu tests %T" >> "$W/times.txt"
  TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins-nonempty timeout 240 build-carry/gpu-tests/cuda_gpu_tests \
    --gtest_output="xml:$W/gpu-tests.xml" > "$W/gpu-tests.log" 2>&1
  echo "gpu tests rc=$? $(date -u +%T); $(grep -E '^\[  (PASSED|FAILED)  \]' "$W/gpu-tests.log" | tr '\n' ' ')" >> "$W/times.txt"
fi

# mma context k_path [split counts beside the policy's]: Hq/Hk 32/8, D = 128, page 16, K8/V8
# k_only. At wgmma fp8_qk S = 32768 the new plugin also runs 48 and 64 splits (3 and 4 CTAs per
# SM): the cap of 2 per SM was set before the CTAs' start got faster (1b3f2e0).
variants=("wgmma 32768 fp8_qk 48,64" "wgmma 32768 transform" "wgmma 16384 fp8_qk" "mma_sync 32768 fp8_qk"
  "mma_sync 65536 fp8_qk")
date -u +"a/b %T" >> "$W/times.txt"
mkdir -p "$W/ab"
for round in 1 2 3 4; do
  for v in "${variants[@]}"; do
    read -r mma context path extra <<< "$v"
    # arm = plugin folder:split count (0 = the policy's); the order alternates by round.
    arms="plugins:0 plugins-nonempty:0"
    for n in ${extra//,/ }; do arms="$arms plugins-nonempty:$n"; done
    [ $((round % 2)) -eq 0 ] && arms=$(echo "$arms" | tr ' ' '\n' | tac | tr '\n' ' ')
    for arm in $arms; do
      plugins=${arm%:*} splits=${arm#*:}
      label=$plugins
      [ "$splits" != 0 ] && label=$plugins-s$splits
      f=$W/ab/r$round-$mma-s$context-$path-$label.json
      limit=$(left)
      [ "$limit" -gt 60 ] && limit=60
      TILEPATH_PLUGIN_PATH=$PWD/build-carry/$plugins timeout "$limit" build-carry/bin/tilepath run --backend cuda \
        --db "$W/ab-$label.sqlite" --kv k8v8 --k-path "$path" --mode k_only --mma "$mma" --batch 1 \
        --context "$context" --q-heads 32 --kv-heads 8 --head-dim 128 --page-size 16 --cache hbm_cold \
        --splits "$splits" --no-ablations --repeats 30 --json > "$f" 2> "$f.err"
      echo "round $round $mma s$context $path $label rc=$?" >> "$W/times.txt"
    done
  done
done
date -u +"done %T" >> "$W/times.txt"

python3 - "$W/ab" > "$W/summary.txt" 2>&1 <<'PY'
import collections, glob, json, os, statistics, sys
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    name = os.path.basename(path)[:-5]
    _, mma, context, k_path, arm = name.split("-", 4)
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
    rows[(mma, context, k_path)][arm].append((m["latency_us"], m["latency_us"] / floor_us, d["kernel"]["grid"]))
print("variant                         arm               grid          latency us (rounds)            median   x floor median")
for key, arms in sorted(rows.items()):
    med = {}
    for arm, runs in sorted(arms.items()):
        lat = [r[0] for r in runs]
        med[arm] = statistics.median(lat)
        print(f"{'/'.join(key):31s} {arm:17s} {str(runs[0][2]):13s} {' '.join(f'{x:6.2f}' for x in lat):30s} "
              f"{med[arm]:7.2f}   {statistics.median(r[1] for r in runs):.3f}")
    for arm in sorted(med):
        if arm != "plugins" and "plugins" in med:
            print(f"{'':31s} {arm} / main's policy: {med[arm] / med['plugins']:.4f}")
PY
cat "$W/times.txt" "$W/summary.txt"
tar cJf "$OUT/call.tar.xz" -C "$W" .
