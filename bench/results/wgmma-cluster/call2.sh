#!/usr/bin/env bash
# Call 2 of bench/results/wgmma-cluster/: the launch policy (pairs of adjacent kv heads in one
# cluster where a wgmma grid runs more than one wave; core/perf/cuda_kernel_plan.h,
# wgmma_cluster_kv_heads) against no clusters (TILEPATH_CUDA_WGMMA_CLUSTER=1), one build. From
# the repository root on the H200 with the build of this tree in build-carry/ (tilepath, the
# plugins, the GPU tests): the wgmma GPU cases with every grid in pairs
# (TILEPATH_CUDA_WGMMA_CLUSTER=2); then bench/wgmma-cluster-pairs.json and
# bench/wgmma-cluster-pairs-grid.json in three rounds of the two arms.
# Everything comes back in $OUT/call.tar.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
export TILEPATH_MODELS_DIR=$PWD/models TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins PATH=$PATH:/usr/local/cuda/bin
nvidia-smi > "$W/smi.txt" 2>&1
date -u +"gpu tests %T" >> "$W/times.txt"
TILEPATH_CUDA_WGMMA_CLUSTER=2 timeout 240 build-carry/gpu-tests/cuda_gpu_tests --gtest_filter='*Wgmma*:CudaPluginRun*' \
  > "$W/gpu-tests.log" 2>&1
echo "gpu tests rc=$? $(date -u +%T); $(grep -E '^\[  (PASSED|FAILED)  \]' "$W/gpu-tests.log" | tr '\n' ' ')" >> "$W/times.txt"
mkdir -p "$W/ab"
for round in 1 2 3; do
  arms="policy off"; [ $round = 2 ] && arms="off policy"
  for arm in $arms; do
    for spec in wgmma-cluster-pairs wgmma-cluster-pairs-grid; do
      date -u +"$arm $spec round $round %T" >> "$W/times.txt"
      n=""; [ $arm = off ] && n=1
      TILEPATH_CUDA_WGMMA_CLUSTER=$n timeout 150 build-carry/bin/tilepath sweep bench/$spec.json --backend cuda \
        --db "$W/ab/$arm-round$round.sqlite" > "$W/sweep-$arm-$spec-$round.log" 2>&1
      echo "  rc=$?" >> "$W/times.txt"
    done
  done
done
# The rule, fixed before the call: keep the policy for a family (K8/V8; the 16-bit caches) if,
# over its cases whose grid runs more than one wave, policy/off (the median of three rounds) is
# <= 0.99 in geometric mean and no case is above 1.01. One-wave cases launch alike in both arms:
# their ratios say how far the arms differ by chance.
python3 - "$W/ab" > "$W/decision.txt" <<'PY'
import math, sqlite3, statistics, sys
def lat(arm):
    out = {}
    for r in (1, 2, 3):
        con = sqlite3.connect(f"{sys.argv[1]}/{arm}-round{r}.sqlite")
        for key, kv, path, mode, qh, kh, d, b, s, v, f, waves in con.execute(
                "SELECT c.case_key, c.kv, c.k_path, c.mode, c.q_heads, c.kv_heads, c.head_dim, c.batch, c.context, "
                "m.value, f.value, w.value FROM cases c "
                "JOIN measurements m ON m.case_id = c.id AND m.name = 'latency_us' "
                "JOIN measurements f ON f.case_id = c.id AND f.name = 'floor_fraction' "
                "JOIN measurements w ON w.case_id = c.id AND w.name = 'waves' WHERE c.status = 'ok'"):
            out.setdefault((kv, path, mode, qh, kh, d, b, s), []).append((v, 1 / f, waves))
    return {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v), v[0][2], len(v))
            for k, v in out.items()}
pol, off = lat("policy"), lat("off")
gmean = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
keep = []
for family, kvs in (("K8/V8", {"k8v8"}), ("16-bit", {"k16v16", "k16v8", "k8v16"})):
    multi, one = [], []
    for k in sorted(k for k in off if k[0] in kvs and k in pol):
        r = pol[k][0] / off[k][0]
        (multi if off[k][2] > 1 else one).append(r)
        print(f"{k} waves {off[k][2]:.0f}: policy {pol[k][0]:.2f} us ({pol[k][1]:.3f}x floor, n={pol[k][3]}) / off "
              f"{off[k][0]:.2f} ({off[k][1]:.3f}x, n={off[k][3]}) = {r:.4f}")
    g = gmean(multi)
    print(f"{family}: more than one wave: {len(multi)} cases, geometric mean {g:.4f}, max {max(multi, default=float('nan')):.4f}; "
          f"one wave: {len(one)} cases, geometric mean {gmean(one):.4f}")
    if multi and g <= 0.99 and max(multi) <= 1.01:
        keep.append(family)
print("keep: " + (", ".join(keep) if keep else "none"))
PY
date -u +"decision %T: $(tail -1 "$W/decision.txt")" >> "$W/times.txt"
cp "$W/times.txt" "$W/decision.txt" "$OUT/"
tar cJf "$OUT/call.tar.xz" -C "$W" .
