#!/usr/bin/env python3
"""bench/make_performance_md.py's section on the wgmma kernels' compute side.

On a copy of the bundled database with the compute side (compute_only's slope and two isolated
stages) given to three wgmma cases, two below their ring and one above it, the section counts
those three and no other, names the ring the larger side at two and the compute at one, and
lists the one; on the bundled database as it is (no case with compute_only) it falls back to the
file of the call that first measured the compute side.

  python3 tests/backends/performance_md_compute_side.py SOURCE_DIR
"""
import importlib.util
import os
import shutil
import sqlite3
import sys
import tempfile


def load_generator(root):
    sys.path.insert(0, os.path.join(root, "bench"))
    spec = importlib.util.spec_from_file_location("make_performance_md",
                                                  os.path.join(root, "bench", "make_performance_md.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def section(gen, root, db):
    lines = []
    con = gen.open_db(db)
    try:
        gen.wgmma_compute_side_section(root, lines.append, con)
    finally:
        con.close()
    return "\n".join(lines)


def give_compute_sides(db, compute_over_ring):
    """Gives the first wgmma cases with a ring (one per factor) a compute_only slope of factor x their
    ring and two isolated stages; returns their case keys."""
    con = sqlite3.connect(db)
    rows = con.execute("SELECT c.id, c.case_key, m.value FROM cases c JOIN measurements m ON m.case_id = c.id "
                       "AND m.name = 'tile_interval_load_only_us' WHERE c.status = 'ok' AND c.mma = 'wgmma' "
                       "AND c.head_dim = 128 ORDER BY c.id LIMIT ?", (len(compute_over_ring),)).fetchall()
    assert len(rows) == len(compute_over_ring), rows
    for (case_id, _, ring), factor in zip(rows, compute_over_ring):
        con.execute("INSERT INTO measurements (case_id, name, value, unit) VALUES (?, "
                    "'tile_interval_compute_only_us', ?, 'us')", (case_id, factor * ring))
        con.executemany("INSERT INTO stage_costs (case_id, stage, method, cost_us) VALUES (?, ?, 'isolated', ?)",
                        [(case_id, "qk", 0.25 * factor * ring), (case_id, "softmax", 0.5 * factor * ring)])
    con.commit()
    con.close()
    return [key for _, key, _ in rows]


def main():
    root = sys.argv[1]
    bundled = os.path.join(root, "data", "h200-sweep.sqlite")
    gen = load_generator(root)
    failures = []

    def check(condition, what, text):
        if not condition:
            failures.append(what + "\n" + text)

    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "with-compute.sqlite")
        shutil.copy(bundled, db)
        give_compute_sides(db, [0.5, 0.8, 1.25])
        n_wgmma = sqlite3.connect(db).execute(
            "SELECT count(*) FROM cases WHERE status = 'ok' AND mma = 'wgmma'").fetchone()[0]
        text = section(gen, root, db)
        check(f"3 of its {n_wgmma} ok wgmma cases have both sides measured" in text, "the count of cases", text)
        check("**the ring at 2 of 3 cases, the compute at 1**" in text, "the larger side's count", text)
        listed = text.split("The cases where the compute is the larger side:", 1)
        check(len(listed) == 2, "the list of compute-limited cases", text)
        if len(listed) == 2:
            table_rows = [line for line in listed[1].split("\n\n")[1].splitlines() if line.startswith("| B=")]
            check(len(table_rows) == 1 and "| the compute |" in table_rows[0], "one compute-limited row", text)
            check("qk " in table_rows[0] and "softmax " in table_rows[0], "its isolated stages", text)
        check(gen.WGMMA_COMPUTE_SIDE not in text, "no fallback when the database has the compute side", text)

    text = section(gen, root, bundled)
    has_side = sqlite3.connect(bundled).execute(
        "SELECT count(*) FROM measurements WHERE name = 'tile_interval_compute_only_us'").fetchone()[0]
    if has_side == 0:
        check(gen.WGMMA_COMPUTE_SIDE in text and "both sides measured" not in text,
              "the fallback to the first call's file", text)
    else:
        check("both sides measured" in text, "the bundled database's compute side", text)

    if failures:
        print("\n\n".join(failures))
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
