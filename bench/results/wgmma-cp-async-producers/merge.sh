#!/usr/bin/env bash
# After call 1: the bundled database's 36 wgmma cases at 1-token pages (the cp.async ring's
# kernels, measured in bench/results/wgmma-cp-async-ring/) replaced by call 1's measurements of
# the same cases on this folder's producer, merged (`tilepath merge`); the runs' notes say which
# cases moved where. Needs no GPU. From the repository root, with the change built:
#   bash bench/results/wgmma-cp-async-producers/merge.sh <call 1's regen.sqlite>
# DB names another database to replace (default data/h200-sweep.sqlite), TILEPATH the CLI.
# Refuses a database that is not exactly those 36 cases, all ok, on the cp.async kernels.
set -eu -o pipefail
REGEN=$1
DB=${DB:-data/h200-sweep.sqlite}
TILEPATH=${TILEPATH:-build-device/bin/tilepath}
WHERE="bench/results/wgmma-cp-async-producers/, call 4"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$DB" "$tmp/base.sqlite"
cp "$REGEN" "$tmp/regen.sqlite"
python3 - "$tmp/base.sqlite" "$tmp/regen.sqlite" "$WHERE" <<'PY'
import os, re, sqlite3, sys

base, regen, where = sys.argv[1:]
expected = 36
con = sqlite3.connect(base)
con.execute("PRAGMA foreign_keys = ON")
con.execute("ATTACH ? AS regen", (regen,))
same = "(case_key, mma) IN (SELECT case_key, mma FROM regen.cases)"
ring = "mma = 'wgmma' AND page_size = 1 AND kernel_name LIKE '%\\_wgmma\\_cp\\_async' ESCAPE '\\'"
n_regen = con.execute("SELECT count(*) FROM regen.cases").fetchone()[0]
replaced = con.execute(f"SELECT run_id, count(*) FROM main.cases WHERE {same} AND status = 'ok' AND {ring} "
                       "GROUP BY run_id ORDER BY run_id").fetchall()
n_replaced = sum(count for _, count in replaced)
n_ring = con.execute(f"SELECT count(*) FROM main.cases WHERE {ring}").fetchone()[0]
if n_regen != expected or n_replaced != expected or n_ring != expected:
    sys.exit(f"call 1's database holds {n_regen} cases, {n_replaced} of them bundled as ok on the cp.async ring, "
             f"of {n_ring} bundled on it; expected {expected} of {expected} of {expected}")
not_ok = con.execute("SELECT count(*) FROM regen.cases WHERE status != 'ok'").fetchone()[0]
if not_ok:
    sys.exit(f"{not_ok} of call 1's cases are not ok")
other = con.execute(f"SELECT count(*) FROM regen.cases WHERE NOT ({ring})").fetchone()[0]
if other:
    sys.exit(f"{other} of call 1's cases are not wgmma at 1-token pages on a cp.async kernel")
for run_id, count in replaced:
    notes = con.execute("SELECT notes FROM main.runs WHERE id = ?", (run_id,)).fetchone()[0].rstrip()
    con.execute("UPDATE main.runs SET notes = ? WHERE id = ?",
                (notes + ("" if notes.endswith(".") else ".") + f" Its {count} cases on the cp.async ring were "
                 f"measured again with that ring's two producer warps ({where}).", run_id))
con.execute(f"DELETE FROM main.cases WHERE {same}")
for run_id, command in con.execute("SELECT id, command FROM regen.runs").fetchall():
    spec = re.search(r"(\S+)\.json", command)
    con.execute("UPDATE regen.runs SET notes = ? WHERE id = ?",
                (f"sweep {os.path.basename(spec.group(1)) if spec else command}: its wgmma cases at 1-token pages, "
                 f"which no TMA box tiles, on the cp.async ring's kernels with a producer warp each for K and V "
                 f"({where}, the narrowed specs of bench/results/wgmma-cp-async-ring/regen-specs/); the spec's "
                 f"other cases are earlier runs'.", run_id))
con.commit()
print(f"replaced {n_replaced} cases of runs {', '.join(str(r) for r, _ in replaced)}")
PY
"$TILEPATH" merge "$tmp/base.sqlite" "$tmp/regen.sqlite" --out "$tmp/merged.sqlite"
mv "$tmp/merged.sqlite" "$DB"
