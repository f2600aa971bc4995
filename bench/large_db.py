#!/usr/bin/env python3
"""Large-database benchmark (issue 20): build a ~100k-case database from the bundled one
and time what a user waits for on it, beside the same on the bundled database.

    bench/large_db.py --build-dir build [--copies 90] [--work DIR] [--out bench/results/large-db]

The large file is the bundled data/h200-sweep.sqlite with its runs and cases copied
`--copies` times in SQL (each copy a run of its own: new uuid, notes "replica N", ids
shifted, every child row copied; the schema and user_version unchanged). Both files are
then written once by `tilepath db upgrade` (current schema and the read indexes, as any
run into them would add); the large one is also measured before that (report only:
a file that nothing has written since it was made has no read indexes). Measured, on
each database:
  report_s        `tilepath report --db FILE` to /dev/null (wall time, best of --repeats)
  report_rss_mb   its peak resident set
  gui_*           `tilepath-gui --open FILE --timing` (offscreen unless DISPLAY is set;
                  under xvfb-run with --xvfb): first_window_ms (the window shown and
                  painted, events processed), cases_read_ms, view_<name>_ms (each view
                  shown, filled and rendered in turn), every_view_ms, peak_rss_mb (VmHWM);
                  all times from the start of main()
and the ratios of the large database's numbers to the bundled one's.
Targets (issue 20): first window < 1 s, every view < 2 s, RSS < 400 MB, report < 1 s,
ratio to the bundled open <= 3x. Writes raw.txt (every command and its output) and
summary.json into --out.
"""
import argparse
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLES = ["measurements", "stage_costs", "predictions", "quality", "artifacts"]


def columns(db, table):
    return [r[1] for r in db.execute(f"PRAGMA table_info({table})")]


def build(source, out, copies):
    if os.path.exists(out):
        os.remove(out)
    shutil.copyfile(source, out)
    db = sqlite3.connect(out, isolation_level=None)
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")
    db.execute("BEGIN")
    max_id = {t: db.execute(f"SELECT coalesce(max(id), 0) FROM {t}").fetchone()[0] for t in ["runs", "cases"] + TABLES}
    run_cols = [c for c in columns(db, "runs") if c not in ("id", "uuid", "notes")]
    case_cols = [c for c in columns(db, "cases") if c not in ("id", "run_id")]
    runs = db.execute("SELECT id FROM runs WHERE id <= ? ORDER BY id", (max_id["runs"],)).fetchall()
    for k in range(1, copies):
        for (run_id,) in runs:
            db.execute(
                f"INSERT INTO runs(id, uuid, notes, {', '.join(run_cols)}) SELECT id + ?, ?, "
                f"trim(notes || ' (replica {k})'), {', '.join(run_cols)} FROM runs WHERE id = ?",
                (k * max_id["runs"], str(uuid.uuid4()), run_id),
            )
        db.execute(
            f"INSERT INTO cases(id, run_id, {', '.join(case_cols)}) SELECT id + ?, run_id + ?, {', '.join(case_cols)} "
            "FROM cases WHERE id <= ?",
            (k * max_id["cases"], k * max_id["runs"], max_id["cases"]),
        )
        for t in TABLES:
            cols = [c for c in columns(db, t) if c not in ("id", "case_id")]
            db.execute(
                f"INSERT INTO {t}(id, case_id, {', '.join(cols)}) SELECT id + ?, case_id + ?, {', '.join(cols)} "
                f"FROM {t} WHERE id <= ?",
                (k * max_id[t], k * max_id["cases"], max_id[t]),
            )
    db.execute("COMMIT")
    db.execute("PRAGMA journal_mode = DELETE")
    n = db.execute("SELECT count(*) FROM cases").fetchone()[0]
    check = db.execute("PRAGMA quick_check").fetchone()[0]
    db.close()
    if check != "ok":
        sys.exit(f"{out}: quick_check says {check}")
    return n


def run_measured(cmd, log, env=None, stdout=subprocess.PIPE):
    """Runs cmd; returns (wall seconds, peak RSS MB of this child, stdout text)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out = p.stdout if stdout == subprocess.PIPE else ""
    log.write(f"$ {' '.join(cmd)}\nexit {p.returncode}, wall {wall:.3f} s\n{out[-4000:]}{p.stderr[-4000:]}\n")
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr}")
    # ru_maxrss of RUSAGE_CHILDREN is the largest of all children so far: exact only when
    # this child is the largest yet, so the GUI reports its own peak as well.
    return wall, max(before, after) / 1024.0, out


def measure_report(db, args, log):
    tilepath = os.path.join(args.build_dir, "bin", "tilepath")
    walls = []
    for _ in range(args.repeats):
        with open(os.devnull, "w") as null:
            wall, _, _ = run_measured([tilepath, "report", "--db", db], log, stdout=null)
        walls.append(wall)
    return min(walls)


def measure(db, args, log):
    gui = os.path.join(args.build_dir, "bin", "tilepath-gui")
    result = {"report_s": measure_report(db, args, log)}
    env = dict(os.environ)
    prefix = []
    if args.xvfb:
        prefix = ["xvfb-run", "-a", "-s", "-screen 0 1920x1080x24"]  # a real X server
        env.pop("QT_QPA_PLATFORM", None)
    elif "DISPLAY" not in env:
        env["QT_QPA_PLATFORM"] = "offscreen"
    runs = []
    for _ in range(args.repeats):
        _, _, out = run_measured(prefix + [gui, "--open", db, "--timing"], log, env=env)
        timing = {}
        for line in out.splitlines():
            if line.startswith("timing "):
                key, value = line.split()[1:3]
                timing[key] = float(value)
        runs.append(timing)
    for key in runs[0]:
        result["gui_" + key] = min(r[key] for r in runs) if not key.endswith("rss_mb") else max(r[key] for r in runs)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--copies", type=int, default=90)
    ap.add_argument("--work", default="/tmp/tilepath-large-db")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "large-db"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--reuse", action="store_true", help="keep an already built large file (still upgraded)")
    ap.add_argument("--xvfb", action="store_true", help="run the GUI under xvfb-run instead of offscreen")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    bundled = os.path.join(ROOT, "data", "h200-sweep.sqlite")
    small = os.path.join(args.work, "bundled.sqlite")
    large = os.path.join(args.work, f"large-x{args.copies}.sqlite")
    shutil.copyfile(bundled, small)
    tilepath = os.path.join(args.build_dir, "bin", "tilepath")
    with open(os.path.join(args.out, "raw.txt"), "w") as log:
        log.write(f"$ {' '.join(sys.argv)}\nnproc {os.cpu_count()}, load average {os.getloadavg()}\n")
        if not (args.reuse and os.path.exists(large)):
            t0 = time.perf_counter()
            n = build(small, large, args.copies)
            log.write(f"built {large}: {n} cases, {os.path.getsize(large)} bytes, {time.perf_counter() - t0:.1f} s\n")
        report_unindexed_s = None
        if not args.reuse:
            report_unindexed_s = measure_report(large, args, log)
        # Also with --reuse: a file built by an older tilepath gets the current schema and
        # read indexes (a no-op on a file that has them).
        run_measured([tilepath, "db", "upgrade", large], log)
        run_measured([tilepath, "db", "upgrade", small], log)
        small_cases = sqlite3.connect(f"file:{small}?mode=ro", uri=True).execute("SELECT count(*) FROM cases").fetchone()[0]
        large_cases = sqlite3.connect(f"file:{large}?mode=ro", uri=True).execute("SELECT count(*) FROM cases").fetchone()[0]
        # The machine's load before each database's runs: other builds share the cores.
        summary = {"bundled": {"cases": small_cases, "load_average_before": os.getloadavg()}}
        summary["bundled"].update(measure(small, args, log))
        summary["large"] = {"cases": large_cases, "load_average_before": os.getloadavg()}
        summary["large"].update(measure(large, args, log))
        if report_unindexed_s is not None:
            summary["large"]["report_s_before_any_write"] = report_unindexed_s
        summary["load_average_after"] = os.getloadavg()
        summary["ratio_large_to_bundled"] = {
            k: summary["large"][k] / summary["bundled"][k]
            for k in summary["large"]
            if k in summary["bundled"] and k not in ("cases", "load_average_before") and summary["bundled"][k]
        }
        text = json.dumps(summary, indent=2)
        log.write(text + "\n")
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
