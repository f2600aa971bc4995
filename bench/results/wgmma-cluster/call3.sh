#!/usr/bin/env bash
# Call 3 of bench/results/wgmma-cluster/: the bundled K8/V8 wgmma cases whose grid runs more than
# one wave, measured again with the cluster launch policy (the only cases whose launch it
# changes), and the wgmma GPU cases under the policy as shipped. From the repository root on the
# H200 with the build of this tree in build-carry/ (tilepath, the plugins, the GPU tests): the two
# narrowed specs of bench/results/wgmma-cluster/regen-specs/ (80 cases) into one database.
# Everything comes back in $OUT/call.tar.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
export TILEPATH_MODELS_DIR=$PWD/models TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins PATH=$PATH:/usr/local/cuda/bin
nvidia-smi > "$W/smi.txt" 2>&1
date -u +"gpu tests %T" >> "$W/times.txt"
timeout 200 build-carry/gpu-tests/cuda_gpu_tests --gtest_filter='*Wgmma*:CudaPluginRun*' > "$W/gpu-tests.log" 2>&1
echo "gpu tests rc=$? $(date -u +%T); $(grep -E '^\[  (PASSED|FAILED)  \]' "$W/gpu-tests.log" | tr '\n' ' ')" >> "$W/times.txt"
for spec in h200-cuda-wgmma h200-cuda-grid; do
  date -u +"$spec %T" >> "$W/times.txt"
  timeout --signal=INT --kill-after=30 330 build-carry/bin/tilepath sweep \
    "bench/results/wgmma-cluster/regen-specs/$spec.json" --backend cuda --db "$W/regen.sqlite" >> "$W/regen.log" 2>&1
  echo "  rc=$? $(tail -n 1 "$W/regen.log")" >> "$W/times.txt"
done
python3 - "$W/regen.sqlite" > "$W/regen-summary.txt" 2>&1 <<'PY'
import json, sqlite3, sys
con = sqlite3.connect(sys.argv[1])
print(con.execute("SELECT status, count(*) FROM cases GROUP BY status").fetchall())
clusters = {}
for (text,) in con.execute("SELECT a.data FROM artifacts a WHERE a.name = 'kernel.json'"):
    k = json.loads(text)
    clusters[str(k.get("cluster"))] = clusters.get(str(k.get("cluster")), 0) + 1
print("kernel.json clusters:", clusters)
PY
date -u +"done %T" >> "$W/times.txt"
cp "$W/times.txt" "$W/regen-summary.txt" "$OUT/"
tar cJf "$OUT/call.tar.xz" -C "$W" .
