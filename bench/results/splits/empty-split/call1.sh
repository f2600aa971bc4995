#!/usr/bin/env bash
# The split policy's 33 splits at B = 1, S = 32768, Hq/Hk 32/8 on wgmma: split_tokens rounds
# 32768 / 33 up to 1024 tokens, so 32 splits cover the context and the 33rd is empty (8 CTAs
# that read nothing, and one more partial per row for the combine). A/B of `--splits 32`
# against the policy's choice, both K paths (k_only), cold, four alternating rounds; each run
# its own process with its own read bandwidth. From the repository root on the H200, with the
# build in build-carry/:
#   OUT=$OUT bash bench/results/splits/empty-split/call1.sh
set -u
export TILEPATH_MODELS_DIR=$PWD/models TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins
W=$OUT/work
mkdir -p "$W"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >"$W/smi.txt" 2>&1
for round in 1 2 3 4; do
  for path in fp8_qk transform; do
    for splits in 0 32; do
      build-carry/bin/tilepath run --backend cuda --db "$W/ab.sqlite" --kv k8v8 --k-path "$path" --mode k_only \
        --mma wgmma --batch 1 --context 32768 --q-heads 32 --kv-heads 8 --head-dim 128 --page-size 16 \
        --cache hbm_cold --splits "$splits" --no-ablations --repeats 30 --json >"$W/r$round-$path-s$splits.json" 2>&1
      echo "round $round $path splits=$splits rc=$? $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); m=d['measurements']; print(d['status'], m.get('latency_us'), m.get('read_bandwidth_gbps'), d['kernel']['grid'])" "$W/r$round-$path-s$splits.json" 2>&1 | tail -1)"
    done
  done
done
tar -C "$W" -czf "$OUT/call.tar.gz" . && rm -rf "$W"
