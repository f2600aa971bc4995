#!/usr/bin/env bash
# Call 1 of bench/results/wgmma-cluster/: the wgmma kernels launched with the CTAs of N adjacent
# kv heads of a (split, request) as one thread-block cluster (TILEPATH_CUDA_WGMMA_CLUSTER=N)
# against the plain launch. From the repository root on the H200 with the build of this tree in
# build-carry/ (tilepath, the plugins, the GPU tests) and the probe in build-carry/probe/:
# the wgmma GPU cases with clusters of 8; bench/wgmma-cluster.json in three rounds of four arms
# (plain, 2, 4, 8); then bench/paged_read_bound at the four floor-target shapes, whose
# split_read_cluster2/8 readers measure what co-scheduled heads win in a reader alone.
# Everything comes back in $OUT/call.tar.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
export TILEPATH_MODELS_DIR=$PWD/models TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins PATH=$PATH:/usr/local/cuda/bin
nvidia-smi > "$W/smi.txt" 2>&1
date -u +"gpu tests %T" >> "$W/times.txt"
TILEPATH_CUDA_WGMMA_CLUSTER=8 timeout 240 build-carry/gpu-tests/cuda_gpu_tests --gtest_filter='*Wgmma*:CudaPluginRun*' \
  > "$W/gpu-tests.log" 2>&1
echo "gpu tests rc=$? $(date -u +%T); $(grep -E '^\[  (PASSED|FAILED)  \]' "$W/gpu-tests.log" | tr '\n' ' ')" >> "$W/times.txt"
mkdir -p "$W/ab"
for round in 1 2 3; do
  arms="plain c2 c4 c8"; [ $round = 2 ] && arms="c8 c4 c2 plain"; [ $round = 3 ] && arms="c4 plain c8 c2"
  for arm in $arms; do
    date -u +"$arm round $round %T" >> "$W/times.txt"
    n=""; [ $arm != plain ] && n=${arm#c}
    TILEPATH_CUDA_WGMMA_CLUSTER=$n timeout 100 build-carry/bin/tilepath \
      sweep bench/wgmma-cluster.json --backend cuda --db "$W/ab/$arm-round$round.sqlite" > "$W/sweep-$arm-$round.log" 2>&1
    echo "  rc=$?" >> "$W/times.txt"
  done
done
# The rule, fixed before the call: keep clusters of N for a mode if the median over rounds is
# <= 0.99 of plain in geometric mean over the points and no point is above 1.01.
python3 - "$W/ab" > "$W/decision.txt" <<'PY'
import math, sqlite3, statistics, sys
def lat(arm):
    out = {}
    for r in (1, 2, 3):
        con = sqlite3.connect(f"{sys.argv[1]}/{arm}-round{r}.sqlite")
        for b, s, mode, v, f in con.execute(
                "SELECT c.batch, c.context, c.mode, m.value, f.value FROM cases c "
                "JOIN measurements m ON m.case_id = c.id AND m.name = 'latency_us' "
                "JOIN measurements f ON f.case_id = c.id AND f.name = 'floor_fraction' WHERE c.status = 'ok'"):
            out.setdefault((b, s, mode), []).append((v, 1 / f))
    return {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v), len(v)) for k, v in out.items()}
plain = lat("plain")
gmean = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
keep = []
for arm in ("c2", "c4", "c8"):
    a = lat(arm)
    for mode in sorted({k[2] for k in plain}):
        keys = sorted(k for k in plain if k[2] == mode and k in a)
        ratios = []
        for k in keys:
            r = a[k][0] / plain[k][0]
            ratios.append(r)
            print(f"{arm} {k}: {a[k][0]:.2f} ({a[k][1]:.3f}x floor, n={a[k][2]}) / plain {plain[k][0]:.2f} "
                  f"({plain[k][1]:.3f}x, n={plain[k][2]}) = {r:.4f}")
        g = gmean(ratios)
        print(f"{arm} {mode}: geometric mean {g:.4f}, max {max(ratios):.4f}")
        if g <= 0.99 and max(ratios) <= 1.01:
            keep.append(f"{arm} {mode}")
print("keep: " + (", ".join(keep) if keep else "none"))
PY
date -u +"decision %T: $(tail -1 "$W/decision.txt")" >> "$W/times.txt"
mkdir -p "$W/probe"
for shape in 64,4096,32,8,128,1 16,32768,32,8,128,2 4,65536,32,8,128,8 128,2048,32,8,128,1; do
  date -u +"probe $shape %T" >> "$W/times.txt"
  timeout 120 build-carry/probe/paged_read_bound 30 --shape $shape > "$W/probe/probe-${shape//,/_}.json" 2> "$W/probe/probe-${shape//,/_}.err"
  echo "  rc=$?" >> "$W/times.txt"
done
python3 - "$W/probe" > "$W/probe-summary.txt" 2>&1 <<'PY'
import glob, json, sys
for path in sorted(glob.glob(f"{sys.argv[1]}/probe-*.json")):
    d = json.load(open(path))
    rows = {r["name"]: r["median_us"] / d["floor_us"] for r in d["rows"]}
    names = ("stream_project", "page_oneshot_read", "split_read", "split_read_in_order", "split_read_hnd",
             "split_read_cluster2", "split_read_cluster8")
    sh = d["shape"]
    print(f"B={sh['batch']} S={sh['context']} splits {sh['splits']}: " +
          ", ".join(f"{n} {rows[n]:.4f}x" for n in names if n in rows))
PY
date -u +"done %T" >> "$W/times.txt"
cp "$W/times.txt" "$W/decision.txt" "$W/probe-summary.txt" "$OUT/"
tar cJf "$OUT/call.tar.xz" -C "$W" .
