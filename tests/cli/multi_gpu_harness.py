#!/usr/bin/env python3
"""bench/multi_gpu.py end to end on the cpu backend's two devices: one device, both devices and
a job array of three shards merged, the shards of a device in turn and then every shard at once
(two workers on one device); the report must hold every case once, the same cases and statuses
in the merged array as in the two-device sweep, and a run per device naming it.

  python3 tests/cli/multi_gpu_harness.py TILEPATH SOURCE_DIR   (plugins: TILEPATH_PLUGIN_PATH)
"""
import json
import os
import subprocess
import sys
import tempfile


def main():
    tilepath, source = sys.argv[1], sys.argv[2]
    problems = []

    def check(ok, what):
        if not ok:
            problems.append(what)

    for at_once in (False, True):
        with tempfile.TemporaryDirectory() as tmp:
            spec = os.path.join(tmp, "tiny.json")
            with open(spec, "w") as f:
                json.dump({"name": "tiny", "backend": "cpu", "settings": {"warmup": 1, "repeats": 1, "seed": 1},
                           "base": {"q_heads": 8, "kv_heads": 2, "head_dim": 64, "page_size": 16, "kv": "k8v8",
                                    "k_path": "transform", "mode": "full", "cache": "l2_warm"},
                           "axes": {"batch": [1, 2], "context": [64, 128, 192]}}, f)
            out = os.path.join(tmp, "multi-gpu.json")
            proc = subprocess.run([sys.executable, os.path.join(source, "bench", "multi_gpu.py"), "--tilepath",
                                   tilepath, "--backend", "cpu", "--spec", spec, "--work", os.path.join(tmp, "work"),
                                   "--out", out, "--shards", "3"] + (["--shards-at-once"] if at_once else []),
                                  capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                print(proc.stdout, proc.stderr, sep="\n")
                print(f"multi_gpu.py{' --shards-at-once' if at_once else ''} exited {proc.returncode}")
                return 1
            with open(out) as f:
                r = json.load(f)
        mode = "shards at once: " if at_once else "shards in turn: "
        check(r["failures"] == [], f"{mode}failures: {r['failures']}")
        check(r["shards_at_once"] is at_once, f"{mode}shards_at_once {r['shards_at_once']}")
        check(r["cases"] == 6, f"{mode}cases {r['cases']} (want 6)")
        check(r["cases_by_status"] == {"ok": 6}, f"{mode}statuses {r['cases_by_status']}")
        check(r["every_case_once"] is True, f"{mode}a case stored twice")
        check(r["same_cases_as_one_device"] is True,
              f"{mode}the two-device sweep's cases differ from the one-device sweep's")
        check(r["job_array_equals_all_devices"] is True, f"{mode}merged array differs: {r['job_array_differences']}")
        check(r["shards"] == 3 and len(r["commands"]) == 6,
              f"{mode}{r['shards']} shards, {len(r['commands'])} commands")
        per_device = {(d["device_index"], d["device_uid"]): d["cases"] for d in r["per_device"]}
        check(set(per_device) <= {(0, "cpu:0"), (1, "cpu:1")} and sum(per_device.values()) == 6,
              f"{mode}per-device counts {r['per_device']}")
        check([d["uid"] for d in r["devices"]] == ["cpu:0", "cpu:1"], f"{mode}devices {r['devices']}")
        compared = [r[k]["cases"] for k in ("latency_rel_delta_other_devices", "latency_rel_delta_same_device") if r[k]]
        check(sum(compared) == 6, f"{mode}latency compared for {sum(compared)} of 6 cases")
        check(r["latency_rel_change_job_array"]["n"] == 6,
              f"{mode}job-array latency compared for {r['latency_rel_change_job_array']['n']} of 6 cases")
        check(r["speedup_target"] == 1.9 and r["wall_s"]["all_devices"] > 0,
              f"{mode}speed-up fields {r['speedup_target']}")
    for p in problems:
        print("FAILED:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
