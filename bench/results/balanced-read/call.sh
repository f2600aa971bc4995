#!/usr/bin/env bash
# The call of bench/results/balanced-read/: from the repository root on the H200, with
# bench/paged_read_bound.cu (with its balanced_read readers) built as build-probe/paged_read_bound
# (nvcc 13.0, the command in its header). Each shape twice, in two rounds of opposite order; every
# process prints one JSON object. Everything comes back in $OUT/call.tar.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
nvidia-smi > "$W/smi.txt" 2>&1
shapes=${SHAPES:-"64,4096,32,8,128,1 16,32768,32,8,128,2 4,65536,32,8,128,8 128,2048,32,8,128,1 128,1024,32,8,128,1 64,2048,32,8,128,1 16,16384,32,8,128,2 16,8192,32,8,128,2 4,32768,32,8,128,8"}
reversed=$(echo $shapes | tr ' ' '\n' | tac | tr '\n' ' ')
for round in 1 2; do
  list=$shapes; [ $round = 2 ] && list=$reversed
  for s in $list; do
    date -u +"round $round $s %T" >> "$W/times.txt"
    build-probe/paged_read_bound 50 --shape "$s" > "$W/probe-r$round-${s//,/_}.json" 2> "$W/probe-r$round-${s//,/_}.err"
    echo "rc=$?" >> "$W/times.txt"
  done
done
python3 - "$W" > "$W/summary.txt" <<'PY'
import glob, json, os, statistics, sys
rows = {}
for p in sorted(glob.glob(f"{sys.argv[1]}/probe-r*.json")):
    try:
        j = json.load(open(p))
    except Exception as e:
        print(f"{os.path.basename(p)}: {e}")
        continue
    sh = j["shape"]
    for r in j["rows"]:
        rows.setdefault((sh["batch"], sh["context"], sh["splits"], r["name"]), []).append(r["x_floor"])
stamps = {}
for p in sorted(glob.glob(f"{sys.argv[1]}/probe-r*.json")):
    try:
        j = json.load(open(p))
    except Exception:
        continue
    sh = j["shape"]
    for r in j.get("stamps", []):
        stamps.setdefault((sh["batch"], sh["context"], sh["splits"], r["name"]), []).append(r)
for k in sorted(rows):
    v = rows[k]
    print(f"B={k[0]} S={k[1]} splits {k[2]} {k[3]}: x floor " + " ".join(f"{x:.4f}" for x in v)
          + f" (median {statistics.median(v):.4f})")
for k in sorted(stamps):
    for r in stamps[k]:
        print(f"stamps B={k[0]} S={k[1]} splits {k[2]} {k[3]}: {r['ctas']} CTAs, span {r['span_us']} us, CTA ends p50/p90/p99/max "
              + "/".join(str(x) for x in r["cta_end_us"]) + ", SM last end min/p10/p50/p90/max "
              + "/".join(str(x) for x in r["sm_last_end_us"]) + f", SM idle {r['sm_idle_fraction']}")
PY
cp "$W/summary.txt" "$OUT/summary.txt"
tar cJf "$OUT/call.tar.xz" -C "$W" .
