#!/usr/bin/env python3
"""The prebias benchmark table: post-RoPE prebias K8/V8 against plain K8/V8 on the same keys
in one run (bench/prebias-vs-plain.json), one row per (k_path, mode, batch, context, cache).

Usage: python3 bench/prebias_summary.py DB > bench/results/prebias/prebias-vs-plain.json
Each row: both latencies (median, us), prebias / plain, both fractions of the byte floor
(bytes / the run's measured read bandwidth, over the latency), both kernels and the gate
verdicts (worst-row KL and rel_l2 against full precision on the case's own inputs).
"""
import json
import sqlite3
import sys


def main(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = db.execute(
        "SELECT c.id, c.k_repr, c.k_path, c.mode, c.batch, c.context, c.cache, c.kernel_name, c.status "
        "FROM cases c ORDER BY c.id").fetchall()

    def measurement(case_id, name):
        r = db.execute("SELECT value FROM measurements WHERE case_id = ? AND name = ?", (case_id, name)).fetchone()
        return r[0] if r else None

    def gate(case_id):
        out = {}
        for metric, value, threshold, passed, distribution in db.execute(
                "SELECT metric, value, threshold, passed, distribution FROM quality "
                "WHERE case_id = ? AND distribution NOT IN ('', 'random')", (case_id,)):
            out[metric] = {"worst": value, "threshold": threshold, "passed": bool(passed),
                           "distribution": distribution}
        return out

    by_shape = {}
    for case_id, k_repr, k_path, mode, batch, context, cache, kernel, status in rows:
        by_shape.setdefault((k_path, mode, batch, context, cache), {})[k_repr] = {
            "status": status,
            "kernel": kernel,
            "latency_us": measurement(case_id, "latency_us"),
            "floor_fraction": measurement(case_id, "floor_fraction"),
            "gate": gate(case_id),
        }
    table = []
    for (k_path, mode, batch, context, cache), reprs in sorted(by_shape.items()):
        plain, prebias = reprs.get("plain"), reprs.get("prebias")
        row = {"k_path": k_path, "mode": mode, "batch": batch, "context": context, "cache": cache,
               "plain": plain, "prebias": prebias}
        if plain and prebias and plain["latency_us"] and prebias["latency_us"]:
            row["prebias_over_plain"] = prebias["latency_us"] / plain["latency_us"]
        table.append(row)
    run = db.execute("SELECT uuid, started_at, git_revision, device, command FROM runs").fetchall()
    json.dump({"source": path, "runs": [dict(zip(("uuid", "started_at", "git_revision", "device", "command"), r))
                                         for r in run], "rows": table}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main(sys.argv[1])
