#!/usr/bin/env bash
# Call 6 of bench/results/wgmma-ring/: from the repository root on the H200, with bin/tilepath and
# the CUDA plugin of e1969eb (the bundled kernels: every cubin byte-identical) in build-carry/.
# bench/wgmma-splits-per-sm.json twice, the second time with its points in reverse order; then
# per (shape, mode, split count) the median of the two rounds. Everything comes back in
# $OUT/call.tar.xz.
set -u
OUT=${OUT:-out}
W=$OUT/w
mkdir -p "$W"
export TILEPATH_MODELS_DIR=$PWD/models TILEPATH_PLUGIN_PATH=$PWD/build-carry/plugins
python3 -c "
import json
s = json.load(open('bench/wgmma-splits-per-sm.json'))
s['points'].reverse()
json.dump(s, open('$W/reversed.json', 'w'), indent=1)"
for round in 1 2; do
  spec=bench/wgmma-splits-per-sm.json; [ $round = 2 ] && spec=$W/reversed.json
  date -u +"round $round %T" >> "$W/times.txt"
  build-carry/bin/tilepath sweep "$spec" --backend cuda --db "$W/round$round.sqlite" > "$W/sweep-$round.log" 2>&1
  echo "round $round rc=$?" >> "$W/times.txt"
done
python3 - "$W" > "$W/splits.txt" <<'PY'
import sqlite3, statistics, sys
out = {}
for r in (1, 2):
    con = sqlite3.connect(f"{sys.argv[1]}/round{r}.sqlite")
    for b, s, mode, splits, used, status, v, bw in con.execute(
            "SELECT c.batch, c.context, c.mode, c.splits, c.splits_used, c.status, m.value, "
            "(SELECT value FROM measurements WHERE case_id = c.id AND name = 'read_bandwidth_gbps') "
            "FROM cases c LEFT JOIN measurements m ON m.case_id = c.id AND m.name = 'latency_us'"):
        out.setdefault((b, s, mode, splits, used, status), []).append((v, bw))
for k in sorted(out):
    lat = [v for v, _ in out[k] if v is not None]
    print(f"B={k[0]} S={k[1]} {k[2]} splits {k[3]} (used {k[4]}) {k[5]}: rounds "
          + " ".join(f"{v:.2f}" for v in lat) + (f" median {statistics.median(lat):.2f} us" if lat else ""))
PY
tar cJf "$OUT/call.tar.xz" -C "$W" .
