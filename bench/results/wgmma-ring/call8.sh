#!/usr/bin/env bash
# Call 8 of bench/results/wgmma-ring/: from the repository root on the H200, with
# bench/paged_read_bound.cu (with its split_read_headsH readers) built as
# build-carry/bin/paged_read_bound (nvcc 13.0, the command in its header). Each shape twice, in
# two rounds of opposite order; every process prints one JSON object. Everything comes back in
# $OUT/call.tar.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
shapes="64,4096,32,8,64,1 64,4096,32,8,64,2 64,4096,32,8,64,4 64,4096,32,8,64,8"
reversed=$(echo $shapes | tr ' ' '\n' | tac | tr '\n' ' ')
for round in 1 2; do
  list=$shapes; [ $round = 2 ] && list=$reversed
  for s in $list; do
    date -u +"round $round $s %T" >> "$W/times.txt"
    build-carry/bin/paged_read_bound 50 --shape "$s" > "$W/probe-r$round-${s//,/_}.json" 2> "$W/probe-r$round-${s//,/_}.err"
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
for k in sorted(rows):
    v = rows[k]
    print(f"B={k[0]} S={k[1]} splits {k[2]} {k[3]}: x floor " + " ".join(f"{x:.4f}" for x in v)
          + f" (median {statistics.median(v):.4f})")
PY
tar cJf "$OUT/call.tar.xz" -C "$W" .
