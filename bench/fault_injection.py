#!/usr/bin/env python3
"""Fault injection against the tilepath CLI and its run store, with counts.

Each scenario does to the built tool what a crash, a user or a bad file would, then checks
the database: finished cases are never lost, no case is stored twice, the tool never
crashes, never hangs, and every bad input gets a one-line error with the file unchanged.

  kill9-sweep      kill -9 of a cpu sweep at random moments, then a resume; a case the
                   killed sweep reported finished must be in the file
  kill9-export     kill -9 of export and merge at random moments: the output is absent or
                   whole, and the next export leaves no partial file behind
  signals          SIGINT / SIGTERM at random moments from 0 ms: exit 130 (or 0 when the
                   sweep had finished), the file consistent, then a resume completes it
  concurrent       2 and 4 sweeps started together on one file: each case stored once and
                   run once (the faulty test plugin logs every case it runs)
  faulty-plugin    the faulty test plugin's segfault, abort, exit(0) and hang: the sweep
                   ends 0 with the cases stored as failed (poison)
  mutated-specs    mutated copies of a spec through `sweep --dry-run`: exit 0 or 2, one line
  bad-databases    copies of a database with random bytes written mid-file: `report` and
                   `sweep` refuse with one line or read what is intact, and the file is unchanged

Usage: python3 bench/fault_injection.py [--build build] [--out bench/results/fault-injection/results.json]
         [--kills 50] [--signals 50] [--mutations 10000] [--seed 1]
Standard library only. Needs the build's bin/tilepath, plugins/ and test-plugins/.
"""
import argparse
import hashlib
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC = {
    "name": "fi",
    "backend": "cpu",
    "settings": {"warmup": 1, "repeats": 2, "seed": 1, "stage_costs": False, "tile_interval": False},
    "base": {"q_heads": 8, "kv_heads": 2, "head_dim": 64, "page_size": 16, "cache": "l2_warm"},
    "axes": {"kv": "all", "k_path": "all", "mode": "all", "batch": [1, 2], "context": [128, 256]},
}
FINISHED = re.compile(r"^\[\s*\d+%\] case \d+/\d+ (.*) \((ok|failed|unsupported|error)\) ETA")


class Tool:
    def __init__(self, build):
        self.exe = os.path.join(build, "bin", "tilepath")
        self.env = dict(os.environ, TILEPATH_PLUGIN_PATH=os.path.join(build, "plugins"),
                        TILEPATH_MODELS_DIR=os.path.join(ROOT, "models"))
        self.faulty = os.path.join(build, "test-plugins", "libtilepath_backend_fake_faulty.so")

    def popen(self, args, env=None):
        # backslashreplace: a message that is not UTF-8 is counted (mutated_specs), not fatal here
        return subprocess.Popen([self.exe] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                errors="backslashreplace", env=env or self.env)

    def run(self, args, env=None, timeout=600):
        p = self.popen(args, env)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            return 124, out, err
        return p.returncode, out, err


def db_rows(path):
    """(rows, distinct keys, integrity) of the cases table, read-only."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT COUNT(*) FROM cases").fetchone()[0]
        keys = con.execute("SELECT COUNT(DISTINCT c.case_key || r.backend || r.device) FROM cases c "
                           "JOIN runs r ON r.id = c.run_id").fetchone()[0]
        ok = con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return rows, keys, ok
    finally:
        con.close()


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def write_spec(directory, spec, name="spec.json"):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        json.dump(spec, f)
    return path


def full_count(tool, spec_path):
    rc, out, err = tool.run(["sweep", spec_path, "--dry-run"])
    assert rc == 0, err
    return int(re.search(r": (\d+) cases", out).group(1))


def kill9_sweep(tool, rng, tmp, kills):
    spec = write_spec(tmp, SPEC)
    total = full_count(tool, spec)
    # How long a whole sweep takes, to spread the kills over it.
    db0 = os.path.join(tmp, "timing.sqlite")
    start = time.time()
    rc, _, err = tool.run(["sweep", spec, "--db", db0])
    assert rc == 0, err
    span = time.time() - start
    lost = dup = corrupt = crashes = reported = 0
    for k in range(kills):
        db = os.path.join(tmp, f"kill-{k}.sqlite")
        p = tool.popen(["sweep", spec, "--db", db])
        time.sleep(rng.uniform(0, span))
        p.send_signal(signal.SIGKILL)
        _, err = p.communicate()
        finished = [m.group(1) for m in map(FINISHED.match, err.splitlines()) if m]
        reported += len(finished)
        if os.path.exists(db) and os.path.getsize(db) > 0:
            try:
                rows, keys, ok = db_rows(db)
            except sqlite3.DatabaseError:
                rows, keys, ok = 0, 0, False  # a hot journal: the tool's next open rolls it back
            lost += max(0, len(finished) - rows) if ok else 0
        rc, _, err = tool.run(["sweep", spec, "--db", db])
        crashes += rc >= 128 or rc < 0
        rows, keys, ok = db_rows(db)
        dup += rows - keys
        corrupt += not ok
        lost += max(0, total - rows)
    return {"kills": kills, "cases_per_sweep": total, "reported_finished_before_kill": reported,
            "finished_cases_lost": lost, "duplicates": dup, "corrupt_files": corrupt, "resume_crashes": crashes}


def kill9_export(tool, rng, tmp, kills):
    spec = write_spec(tmp, SPEC)
    src = os.path.join(tmp, "src.sqlite")
    assert tool.run(["sweep", spec, "--db", src])[0] == 0
    start = time.time()
    assert tool.run(["export", "--db", src, "--out", os.path.join(tmp, "t.sqlite")])[0] == 0
    span = max(time.time() - start, 0.05)
    bad_outputs = leftovers = 0
    # As a user retrying the same command: each kill is of an export (or merge) to one name.
    exported, merged = os.path.join(tmp, "exported.sqlite"), os.path.join(tmp, "merged.sqlite")
    for k in range(kills):
        out = exported if k % 2 == 0 else merged
        args = ["export", "--db", src, "--out", out] if out == exported else ["merge", src, src, "--out", out]
        p = tool.popen(args)
        time.sleep(rng.uniform(0, span))
        p.send_signal(signal.SIGKILL)
        p.communicate()
        if os.path.exists(out):
            try:
                rows, keys, ok = db_rows(out)
                bad_outputs += not ok or rows == 0
            except sqlite3.DatabaseError:
                bad_outputs += 1
            os.remove(out)
    # The next export and merge to those names remove the partial files of the killed ones.
    assert tool.run(["export", "--db", src, "--out", exported])[0] == 0
    assert tool.run(["merge", src, src, "--out", merged])[0] == 0
    leftovers = len([f for f in os.listdir(tmp) if ".partial-" in f])
    return {"kills": kills, "incomplete_outputs": bad_outputs, "partial_files_left": leftovers}


def signals(tool, rng, tmp, count):
    spec = write_spec(tmp, SPEC)
    total = full_count(tool, spec)
    outcomes = {}
    killed_after_ms = []
    dup = corrupt = lost = crashes = 0
    for k in range(count):
        db = os.path.join(tmp, f"sig-{k}.sqlite")
        sig = signal.SIGINT if k % 2 == 0 else signal.SIGTERM
        p = tool.popen(["sweep", spec, "--db", db])
        started = time.time()
        time.sleep(rng.uniform(0, 0.6) if k % 4 else rng.uniform(0, 0.05))
        p.send_signal(sig)
        after_ms = (time.time() - started) * 1e3
        _, err = p.communicate()
        key = f"{signal.Signals(sig).name}: exit {p.returncode}"
        outcomes[key] = outcomes.get(key, 0) + 1
        if p.returncode == -sig:  # killed by it: the handlers were not in place yet
            killed_after_ms.append(round(after_ms, 2))
        crashes += p.returncode not in (0, 130, -sig)
        finished = [m for m in map(FINISHED.match, err.splitlines()) if m]
        if os.path.exists(db) and os.path.getsize(db) > 0:
            rows, keys, ok = db_rows(db)
            lost += max(0, len(finished) - rows)
        assert tool.run(["sweep", spec, "--db", db])[0] == 0
        rows, keys, ok = db_rows(db)
        dup += rows - keys
        corrupt += not ok
        lost += max(0, total - rows)
    return {"signals": count, "exit_codes": outcomes, "killed_by_the_signal_after_ms": killed_after_ms,
            "unexpected_exits": crashes, "finished_cases_lost": lost, "duplicates": dup, "corrupt_files": corrupt}


def faulty_spec(tmp, name, batches, contexts):
    return write_spec(tmp, {
        "name": name, "backend": "fake_faulty",
        "settings": {"warmup": 1, "repeats": 1, "stage_costs": False, "tile_interval": False},
        "base": {"q_heads": 8, "kv_heads": 2, "head_dim": 64, "page_size": 16, "kv": "k8v8"},
        "axes": {"batch": batches, "context": contexts}}, name + ".json")


def concurrent(tool, tmp):
    results = {}
    for n in (2, 4):
        spec = faulty_spec(tmp, f"conc{n}", [13], [128 * (i + 1) for i in range(8)])
        db = os.path.join(tmp, f"conc-{n}.sqlite")
        log = os.path.join(tmp, f"conc-{n}.log")
        env = dict(tool.env, TILEPATH_PLUGIN_PATH=tool.faulty, TILEPATH_FAKE_RUN_LOG=log)
        procs = [tool.popen(["sweep", spec, "--db", db], env) for _ in range(n)]
        codes = [p.wait() for p in procs]
        for p in procs:
            p.communicate()
        rows, keys, ok = db_rows(db)
        runs = len(open(log).read().splitlines())
        results[f"{n}_sweeps"] = {"cases": 8, "exit_codes": codes, "rows": rows, "duplicates": rows - keys,
                                  "plugin_runs": runs, "corrupt": not ok}
    return results


def faulty_plugin(tool, tmp):
    spec = faulty_spec(tmp, "faulty", [1, 3, 5, 7, 9], [128])
    db = os.path.join(tmp, "faulty.sqlite")
    env = dict(tool.env, TILEPATH_PLUGIN_PATH=tool.faulty)
    start = time.time()
    rc, out, err = tool.run(["sweep", spec, "--db", db, "--case-timeout", "2", "--json"], env, timeout=120)
    j = json.loads(out) if rc == 0 else {}
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    status = dict(con.execute("SELECT batch, status || ': ' || substr(message, 1, 120) FROM cases").fetchall())
    con.close()
    return {"exit_code": rc, "seconds": round(time.time() - start, 1), "poison": len(j.get("poison", [])),
            "worker_restarts": j.get("worker_restarts"), "stored": {str(k): v for k, v in sorted(status.items())}}


def mutate(text, rng):
    b = bytearray(text.encode())
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(4)
        i = rng.randrange(len(b))
        if op == 0:
            b[i] = rng.randrange(256)
        elif op == 1:
            del b[i:i + rng.randint(1, 8)]
        elif op == 2:
            b[i:i] = rng.choice([b"[", b"]", b"{", b"}", b",", b'"', b"-1", b"1e999", b"\x00", b"null", b"9" * 12])
        else:
            j = rng.randrange(len(b))
            b[i:i] = b[j:j + rng.randint(1, 16)]
    return bytes(b)


def mutated_specs(tool, rng, tmp, count):
    text = json.dumps(SPEC)
    codes = {}
    multi_line = crashes = hangs = not_utf8 = 0
    path = os.path.join(tmp, "m.json")
    for _ in range(count):
        with open(path, "wb") as f:
            f.write(mutate(text, rng))
        try:
            p = subprocess.run([tool.exe, "sweep", path, "--dry-run"], capture_output=True, env=tool.env, timeout=30)
            rc, err_bytes = p.returncode, p.stderr
        except subprocess.TimeoutExpired:
            rc, err_bytes = 124, b""
        try:
            err = err_bytes.decode("utf-8")
        except UnicodeDecodeError:
            not_utf8 += 1
            err = err_bytes.decode("utf-8", "backslashreplace")
        codes[rc] = codes.get(rc, 0) + 1
        crashes += rc >= 128 or rc < 0
        hangs += rc == 124
        multi_line += rc != 0 and len(err.strip().splitlines()) != 1
    return {"specs": count, "exit_codes": {str(k): v for k, v in sorted(codes.items())}, "crashes": crashes,
            "hangs": hangs, "errors_not_one_line": multi_line, "errors_not_utf8": not_utf8}


def bad_databases(tool, rng, tmp, count):
    spec = write_spec(tmp, SPEC)
    good = os.path.join(tmp, "good.sqlite")
    assert tool.run(["sweep", spec, "--db", good])[0] == 0
    size = os.path.getsize(good)
    changed = crashes = multi_line = refused = read = 0
    for k in range(count):
        bad = os.path.join(tmp, f"bad-{k}.sqlite")
        with open(good, "rb") as f:
            data = bytearray(f.read())
        at = rng.randrange(4096, size - 200)
        data[at:at + 200] = bytes(rng.randrange(256) for _ in range(200))
        with open(bad, "wb") as f:
            f.write(data)
        before = sha(bad)
        for args in (["report", "--db", bad], ["sweep", spec, "--db", bad]):
            rc, _, err = tool.run(args, timeout=60)
            crashes += rc >= 128 or rc < 0
            if rc != 0:
                refused += 1
                multi_line += len(err.strip().splitlines()) != 1
            else:
                read += 1
        changed += sha(bad) != before
    return {"files": count, "commands": 2 * count, "refused": refused, "read": read, "files_changed": changed,
            "crashes": crashes, "errors_not_one_line": multi_line}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/results/fault-injection/results.json"))
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--signals", type=int, default=50)
    ap.add_argument("--mutations", type=int, default=10000)
    ap.add_argument("--bad-files", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    tool = Tool(args.build)
    rng = random.Random(args.seed)
    results = {"command": " ".join(["python3", "bench/fault_injection.py"] + sys.argv[1:]), "seed": args.seed}
    git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    results["revision"] = git.stdout.strip()
    scenarios = [
        ("kill9_sweep", lambda d: kill9_sweep(tool, rng, d, args.kills)),
        ("kill9_export_merge", lambda d: kill9_export(tool, rng, d, args.kills)),
        ("signals", lambda d: signals(tool, rng, d, args.signals)),
        ("concurrent_sweeps", lambda d: concurrent(tool, d)),
        ("faulty_plugin", lambda d: faulty_plugin(tool, d)),
        ("mutated_specs", lambda d: mutated_specs(tool, rng, d, args.mutations)),
        ("bad_databases", lambda d: bad_databases(tool, rng, d, args.bad_files)),
    ]
    for name, run in scenarios:
        start = time.time()
        with tempfile.TemporaryDirectory(prefix=f"tilepath-fi-{name}-") as d:
            results[name] = run(d)
        results[name]["seconds"] = round(time.time() - start, 1)
        print(name, json.dumps(results[name]), flush=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
