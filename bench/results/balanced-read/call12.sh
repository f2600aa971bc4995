#!/usr/bin/env bash
# Call 12 of bench/results/balanced-read/: do the plugin's wgmma kernels' SMs wait at the end as
# the probe's split_read does? From the repository root on the H200, with the build of this
# tree in build-carry/ (tilepath and the plugins), the trace plugin of
# bench/results/wgmma-start-chain/build-trace-plugin.sh in build-carry/trace/, and the probe in
# build-probe/. One traced `tilepath run` per shape (fp8_qk/k_only on wgmma, HBM-cold), then the
# probe at B = 64 S = 4096 for the GPU's GPC map; idle shares per SM and by GPC in summary.txt.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
nvidia-smi > "$W/smi.txt" 2>&1
export TILEPATH_MODELS_DIR=$PWD/models
for shape in 64,4096,1 128,2048,1 16,32768,2 4,65536,8; do
  IFS=, read -r b s splits <<< "$shape"
  name=b$b-s$s
  date -u +"$name %T" >> "$W/times.txt"
  TILEPATH_PLUGIN_PATH=$PWD/build-carry/trace timeout 150 build-carry/bin/tilepath run --backend cuda --kv k8v8 \
    --k-path fp8_qk --mode k_only --mma wgmma --batch "$b" --context "$s" --q-heads 32 --kv-heads 8 \
    --head-dim 128 --page-size 16 --cache hbm_cold --repeats 3 --warmup 1 --no-ablations --json \
    --db "$W/trace.sqlite" > "$W/trace-$name.txt" 2> "$W/trace-$name.err"
  echo "$name rc=$? lines $(grep -c '^TR ' "$W/trace-$name.txt")" >> "$W/times.txt"
  grep '^TR ' "$W/trace-$name.txt" | xz -9 > "$W/trace-$name.tr.xz"
  rm -f "$W/trace-$name.txt"
done
rm -f "$W/trace.sqlite"
build-probe/paged_read_bound 30 --shape 64,4096,32,8,128,1 > "$W/probe.json" 2> "$W/probe.err"
echo "probe rc=$?" >> "$W/times.txt"
python3 - "$W" > "$W/summary.txt" 2>&1 <<'PY'
import collections, glob, json, lzma, statistics, sys
w = sys.argv[1]
gpc = json.load(open(f"{w}/probe.json"))["gpc_of_sm"]
for path in sorted(glob.glob(f"{w}/trace-*.tr.xz")):
    lines = [l.split() for l in lzma.open(path, "rt")]
    ctas = len({tuple(l[1:4]) for l in lines})
    last = lines[-ctas:]  # the last launch
    f = lambda l, k: int(l[l.index(k) + 1])
    first = min(f(l, "g0") for l in last)
    end = max(f(l, "g9") for l in last)
    span = (end - first) / 1e3
    sm_last = collections.defaultdict(float)
    for l in last:
        sm_last[f(l, "sm")] = max(sm_last[f(l, "sm")], (f(l, "g9") - first) / 1e3)
    ends = [sm_last.get(sm, 0.0) for sm in range(len(gpc))]
    idle = 1 - statistics.mean(ends) / span
    by = collections.defaultdict(list)
    for sm, e in enumerate(ends):
        by[gpc[sm]].append(e)
    groups = " ".join(f"[{len(v)} SMs: {statistics.mean(v):.1f}]" for _, v in sorted(by.items(), key=lambda kv: (len(kv[1]), kv[0])))
    q = sorted(ends)
    print(f"{path.split('/')[-1]}: {ctas} CTAs, span {span:.2f} us, SM last end min/p10/p50/p90/max "
          f"{q[0]:.1f}/{q[len(q)//10]:.1f}/{q[len(q)//2]:.1f}/{q[9*len(q)//10]:.1f}/{q[-1]:.1f}, "
          f"SM idle {idle:.4f}; by GPC group (mean last end, us): {groups}")
j = json.load(open(f"{w}/probe.json"))
for r in j["stamps"]:
    by = collections.defaultdict(list)
    for sm, e in enumerate(r["by_sm"]):
        by[gpc[sm]].append(e)
    groups = " ".join(f"[{len(v)} SMs: {statistics.mean(v):.1f}]" for _, v in sorted(by.items(), key=lambda kv: (len(kv[1]), kv[0])))
    print(f"probe {r['name']}: span {r['span_us']} us, SM idle {r['sm_idle_fraction']}; by GPC group: {groups}")
PY
cp "$W/summary.txt" "$OUT/summary.txt"
tar cJf "$OUT/call.tar.xz" -C "$W" .
