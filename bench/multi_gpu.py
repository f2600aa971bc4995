#!/usr/bin/env python3
"""A sweep on every GPU of a host against one GPU, in one call (issue 22); writes the JSON of
bench/results/multi-gpu.json.

  python3 bench/multi_gpu.py --tilepath build-device/bin/tilepath --backend cuda \\
      --spec data/sweeps/h200-cuda.json --work $OUT/multi-gpu --out $OUT/multi-gpu.json

Three runs of the same spec, each into its own database under --work, each wall-timed:
  1. all devices: `tilepath sweep SPEC --devices all` (or --devices' list): one worker per device
  2. one device:  `tilepath sweep SPEC --devices D0`, D0 the first of --devices
  3. job array:   --shards processes, shard i `--shard i/K --devices D[i % N]`, the shards of one
                  device one after another and the devices at once (with --shards-at-once, every
                  shard at once: several workers on one GPU); then `tilepath merge`
The several-device sweep goes first: on one H200 the first of two identical sweeps took 15%
longer (bench/results/multi-gpu/), and that start-up cost must not count in its favour.
Then, from the databases: every case once in each; the same case keys with the same statuses
in all three (the merged array against step 1); per-device case counts in step 1 by the device
each run names (runs.device_index, runs.device_uid); the latency agreement of every ok case
between step 1 and step 2 (|delta| / step 2's latency), for the cases step 1 ran on another
device than D0 (the issue's target: median <= 2%) and, as the same-device baseline, for those
it ran on D0; the speed-up t(one) / t(all) against 0.95 N.

With one device (N = 1), step 1 is step 2 and the speed-up says nothing: the run then
checks the machinery (workers, run per device, shards, merge) and the repeatability of one GPU.
"""
import argparse
import datetime
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time

SPEEDUP_FRACTION = 0.95  # issue 22: >= 0.95 N
AGREEMENT_TARGET = 0.02  # issue 22: median |delta| <= 2% between devices for the same case


def run(cmd, log):
    """Runs cmd with its output into log; returns (exit status, wall seconds)."""
    start = time.monotonic()
    with open(log, "w") as out:
        status = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT).returncode
    return status, time.monotonic() - start


def backend_devices(tilepath, backend):
    out = subprocess.run([tilepath, "backends", "--json"], capture_output=True, text=True, check=True).stdout
    for b in json.loads(out)["backends"]:
        if b.get("name") == backend:
            return b.get("devices", [])
    raise SystemExit(f"multi_gpu.py: `{tilepath} backends --json` lists no backend {backend!r}")


def read_db(path):
    """{case_key: (status, latency_us or None, device_index, device_uid)} and the per-key row count."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = con.execute(
        "SELECT c.case_key, c.status, r.device_index, r.device_uid, "
        "(SELECT m.value FROM measurements m WHERE m.case_id = c.id AND m.name = 'latency_us') "
        "FROM cases c JOIN runs r ON r.id = c.run_id").fetchall()
    con.close()
    cases, counts = {}, {}
    for key, status, index, uid, latency in rows:
        counts[key] = counts.get(key, 0) + 1
        cases[key] = (status, latency, index, uid)
    return cases, counts


def statuses(cases):
    """{case_key: status} of read_db's cases."""
    return {key: value[0] for key, value in cases.items()}


def spread(values):
    if not values:
        return None
    ordered = sorted(values)
    return {"cases": len(ordered), "median": statistics.median(ordered),
            "p90": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], "max": ordered[-1]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tilepath", required=True)
    ap.add_argument("--backend", required=True)
    ap.add_argument("--spec", required=True)
    ap.add_argument("--work", required=True, help="folder for the databases and logs (created)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--devices", default="all", help="all, or device indices separated by commas (default all)")
    ap.add_argument("--shards", type=int, default=0, help="job-array size (default: one shard per device)")
    ap.add_argument("--shards-at-once", action="store_true",
                    help="start every shard at once, several on one device where there are more shards than devices")
    args = ap.parse_args()

    listed = backend_devices(args.tilepath, args.backend)
    if args.devices == "all":
        devices = [d["index"] for d in listed]
    else:
        devices = [int(x) for x in args.devices.split(",")]
    if not devices:
        raise SystemExit(f"multi_gpu.py: backend {args.backend} has no devices")
    shards = args.shards or len(devices)
    os.makedirs(args.work, exist_ok=True)
    sweep = [args.tilepath, "sweep", args.spec, "--backend", args.backend]
    db = {name: os.path.join(args.work, name + ".sqlite") for name in ("one", "all", "merged")}
    for path in list(db.values()) + [os.path.join(args.work, f"shard-{i}.sqlite") for i in range(shards)]:
        if os.path.exists(path):
            os.remove(path)  # every number of this run comes from this run
    commands, failures = [], []

    def step(name, cmd):
        commands.append(" ".join(cmd))
        status, wall = run(cmd, os.path.join(args.work, name + ".log"))
        if status != 0:
            failures.append(f"{name}: exit {status} ({os.path.join(args.work, name + '.log')})")
        print(f"{name}: {wall:.1f} s, exit {status}", flush=True)
        return wall

    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    wall_all = step("all", sweep + ["--devices", ",".join(map(str, devices)), "--db", db["all"]])
    wall_one = step("one", sweep + ["--devices", str(devices[0]), "--db", db["one"]])

    # The job array: each device runs its shards in turn, the devices at once (or, with
    # --shards-at-once, every shard in a queue of its own).
    start = time.monotonic()
    queues = {}
    for i in range(shards):
        cmd = sweep + ["--shard", f"{i}/{shards}", "--devices", str(devices[i % len(devices)]),
                       "--db", os.path.join(args.work, f"shard-{i}.sqlite")]
        commands.append(" ".join(cmd))
        queues.setdefault(i if args.shards_at_once else devices[i % len(devices)], []).append((i, cmd))
    procs = {}
    while queues or procs:
        for queue in list(queues):
            if queue not in procs:
                i, cmd = queues[queue].pop(0)
                log = open(os.path.join(args.work, f"shard-{i}.log"), "w")
                procs[queue] = (i, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), log)
                if not queues[queue]:
                    del queues[queue]
        time.sleep(0.2)
        for queue, (i, proc, log) in list(procs.items()):
            if proc.poll() is not None:
                log.close()
                if proc.returncode != 0:
                    failures.append(f"shard {i}/{shards}: exit {proc.returncode}")
                del procs[queue]
    wall_shards = time.monotonic() - start
    print(f"job array: {wall_shards:.1f} s", flush=True)
    step("merge", [args.tilepath, "merge"] + [os.path.join(args.work, f"shard-{i}.sqlite") for i in range(shards)]
         + ["--out", db["merged"]])

    read = {name: read_db(path) for name, path in db.items() if os.path.exists(path)}
    missing = [name for name in db if name not in read]
    if missing:
        failures.append("no database from " + ", ".join(missing))
    result = {
        "spec": args.spec, "backend": args.backend, "started_at": started,
        "devices": [d for d in listed if d["index"] in devices],
        "shards": shards, "shards_at_once": args.shards_at_once, "commands": commands, "failures": failures,
    }
    if not missing:
        one, _ = read["one"]
        all_cases, all_counts = read["all"]
        merged, merged_counts = read["merged"]
        per_device = {}
        for status, _, index, uid in all_cases.values():
            entry = per_device.setdefault(f"{index} {uid}", {"device_index": index, "device_uid": uid, "cases": 0,
                                                             "ok": 0})
            entry["cases"] += 1
            entry["ok"] += status == "ok"
        same_device, other_device = [], []
        for key, (status, latency, index, _) in all_cases.items():
            base = one.get(key)
            if status == "ok" and latency and base and base[0] == "ok" and base[1]:
                (same_device if index == devices[0] else other_device).append(abs(latency - base[1]) / base[1])
        # The job array's latencies against the one-device sweep (signed: concurrent shards on
        # one device slow each other down).
        job_array = [(merged[key][1] - base[1]) / base[1] for key, base in one.items()
                     if base[0] == "ok" and base[1] and key in merged and merged[key][0] == "ok" and merged[key][1]]
        n = len(devices)
        result.update({
            "cases": len(all_cases),
            "cases_by_status": {s: sum(1 for v in all_cases.values() if v[0] == s)
                                for s in sorted({v[0] for v in all_cases.values()})},
            "every_case_once": all(c == 1 for c in list(all_counts.values()) + list(merged_counts.values())),
            "same_cases_as_one_device": set(all_cases) == set(one),
            "job_array_equals_all_devices": statuses(merged) == statuses(all_cases),
            "job_array_differences": sorted(set(statuses(merged).items()) ^ set(statuses(all_cases).items()))[:20],
            "per_device": sorted(per_device.values(), key=lambda e: (e["device_index"], e["device_uid"])),
            "wall_s": {"one_device": wall_one, "all_devices": wall_all, "job_array": wall_shards},
            "speedup": wall_one / wall_all if wall_all > 0 else None,
            "speedup_target": SPEEDUP_FRACTION * n,
            "speedup_met": n > 1 and wall_all > 0 and wall_one / wall_all >= SPEEDUP_FRACTION * n,
            "latency_rel_delta_other_devices": spread(other_device),
            "latency_rel_delta_same_device": spread(same_device),
            "latency_rel_change_job_array": {"median": statistics.median(job_array) if job_array else None,
                                             "max": max(job_array) if job_array else None, "n": len(job_array)},
            "agreement_target": AGREEMENT_TARGET,
            "agreement_met": bool(other_device) and statistics.median(other_device) <= AGREEMENT_TARGET,
        })
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps({k: result.get(k) for k in ("cases", "every_case_once", "job_array_equals_all_devices",
                                                  "speedup", "speedup_met", "agreement_met", "failures")}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
