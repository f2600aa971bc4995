#!/usr/bin/env bash
# After call 2: the bundled database less the 130 cases that call 2 measured again under the
# policy of policy.diff, merged (`tilepath merge`) with call 2's database; the runs' notes say
# which cases moved where. Needs no GPU. From the repository root, with policy.diff applied and
# built:
#   bash bench/results/splits/empty-split/merge.sh <call 2's regen.sqlite>
# DB names another database to replace (default data/h200-sweep.sqlite), TILEPATH the CLI.
set -eu -o pipefail
REGEN=$1
DB=${DB:-data/h200-sweep.sqlite}
TILEPATH=${TILEPATH:-build-device/bin/tilepath}
WHERE="bench/results/splits/empty-split/, call 2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$DB" "$tmp/base.sqlite"
cp "$REGEN" "$tmp/regen.sqlite"
python3 - "$tmp/base.sqlite" "$tmp/regen.sqlite" "$WHERE" <<'PY'
import os, re, sqlite3, sys

base, regen, where = sys.argv[1:]
expected = 130
con = sqlite3.connect(base)
con.execute("PRAGMA foreign_keys = ON")
con.execute("ATTACH ? AS regen", (regen,))
same = "(case_key, mma) IN (SELECT case_key, mma FROM regen.cases)"
n_regen = con.execute("SELECT count(*) FROM regen.cases").fetchone()[0]
moved = con.execute(f"SELECT run_id, count(*) FROM main.cases WHERE {same} GROUP BY run_id ORDER BY run_id").fetchall()
n_moved = sum(count for _, count in moved)
if n_regen != expected or n_moved != expected:
    sys.exit(f"call 2's database holds {n_regen} cases and {n_moved} of them are bundled; expected {expected} of {expected}")
empty_split = ("(splits_used - 1) * (((context + splits_used - 1) / splits_used + 31) / 32 * 32) >= context "
               "AND splits = 0 AND splits_used > 1")
left = con.execute(f"SELECT count(*) FROM regen.cases WHERE {empty_split}").fetchone()[0]
if left:
    sys.exit(f"{left} of call 2's cases still launched an empty split: is policy.diff in its build?")
other_cubin = con.execute("SELECT count(*) FROM regen.cases r JOIN main.cases b USING (case_key, mma) "
                          "WHERE r.status = 'ok' AND r.cubin_sha256 != b.cubin_sha256").fetchone()[0]
if other_cubin:
    sys.exit(f"{other_cubin} of call 2's cases ran another cubin than the case they would replace")
for run_id, count in moved:
    notes = con.execute("SELECT notes FROM main.runs WHERE id = ?", (run_id,)).fetchone()[0].rstrip()
    con.execute("UPDATE main.runs SET notes = ? WHERE id = ?",
                (notes + ("" if notes.endswith(".") else ".") + f" Its {count} cases at B = 1 whose launch had an empty split are measured again under the "
                 f"policy that launches only the splits holding tokens ({where}).", run_id))
# Today's sweep also measures the wgmma kernels' compute side (compute_only and each compute
# stage alone). The bundled wgmma cases hold only their ring (load_only) until that compute side
# is merged for all of them (bench/results/wgmma-stage-costs/), so these cases keep that form;
# call 2's archive keeps what was measured.
compute_side = ("name IN ('latency_compute_only_us', 'tile_interval_compute_only_us') OR "
                "(name LIKE 'latency_isolate_%' AND name != 'latency_isolate_combine_us')")
wgmma_cases = "case_id IN (SELECT id FROM regen.cases WHERE mma = 'wgmma')"
dropped = con.execute(f"DELETE FROM regen.measurements WHERE {wgmma_cases} AND ({compute_side})").rowcount
con.execute(f"DELETE FROM regen.stage_costs WHERE {wgmma_cases} AND stage != 'combine'")
print(f"left out {dropped} compute-side measurements of call 2's wgmma cases")
con.execute(f"DELETE FROM main.cases WHERE {same}")
for run_id, command in con.execute("SELECT id, command FROM regen.runs").fetchall():
    spec = re.search(r"(\S+)\.json", command)
    con.execute("UPDATE regen.runs SET notes = ? WHERE id = ?",
                (f"sweep {os.path.basename(spec.group(1)) if spec else command}: the cases at B = 1 whose launch had an empty split, measured again under the policy "
                 f"that launches only the splits holding tokens, with the same cubins ({where}, narrowed spec "
                 f"regen-specs/); the spec's other cases are earlier runs'.", run_id))
con.commit()
print(f"replaced {n_moved} cases of runs {', '.join(str(r) for r, _ in moved)}")
PY
"$TILEPATH" merge "$tmp/base.sqlite" "$tmp/regen.sqlite" --out "$tmp/merged.sqlite"
# every prediction again: the wgmma cases' from the measurements they keep
"$TILEPATH" db reanalyze "$tmp/merged.sqlite"
mv "$tmp/merged.sqlite" "$DB"
