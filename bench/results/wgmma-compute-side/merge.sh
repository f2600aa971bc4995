#!/usr/bin/env bash
# After the device calls: the bundled wgmma cases that have compute-side ablations replaced by
# the calls' measurements of the same cases (`tilepath merge --replace`), which add compute_only
# and the isolated stages to each. Needs no GPU. From the repository root:
#   bash bench/results/wgmma-compute-side/merge.sh <the last call's regen.sqlite>
# DB names another database to replace (default data/h200-sweep.sqlite), TILEPATH the CLI.
# Refuses a database with a case that is not ok or has no compute_only.
set -eu -o pipefail
REGEN=$1
DB=${DB:-data/h200-sweep.sqlite}
TILEPATH=${TILEPATH:-build-device/bin/tilepath}
WHERE="bench/results/wgmma-compute-side/"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$REGEN" "$tmp/regen.sqlite"
python3 - "$tmp/regen.sqlite" "$WHERE" <<'PY'
import os, re, sqlite3, sys

regen, where = sys.argv[1:]
con = sqlite3.connect(regen)
bad = con.execute("SELECT count(*) FROM cases WHERE status != 'ok' OR mma != 'wgmma' OR head_dim != 128 "
                  "OR page_size = 1").fetchone()[0]
if bad:
    sys.exit(f"{bad} cases of {regen} are not ok wgmma cases at D = 128 on the TMA ring")
without = con.execute("SELECT count(*) FROM cases WHERE id NOT IN (SELECT case_id FROM measurements "
                      "WHERE name = 'tile_interval_compute_only_us')").fetchone()[0]
if without:
    sys.exit(f"{without} cases of {regen} have no compute_only interval")
for run_id, command in con.execute("SELECT id, command FROM runs").fetchall():
    spec = re.search(r"(\S+)\.json", command)
    con.execute("UPDATE runs SET notes = ? WHERE id = ?",
                (f"sweep {os.path.basename(spec.group(1)) if spec else command}: its wgmma cases at D = 128 on "
                 f"the TMA ring measured again with the compute-side ablations (compute_only and the isolated "
                 f"stages), the same cubins ({where}, the narrowed specs of regen-specs/ there); the spec's "
                 f"other cases are earlier runs'.", run_id))
con.commit()
print(con.execute("SELECT count(*) FROM cases").fetchone()[0], "cases in", regen)
PY
"$TILEPATH" merge "$DB" "$tmp/regen.sqlite" --replace --out "$tmp/merged.sqlite"
mv "$tmp/merged.sqlite" "$DB"
