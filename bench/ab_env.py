#!/usr/bin/env python3
"""A/B(/C...) of plugin environment settings on the GPU machine, through the CLI.

Runs `tilepath run --json --no-ablations` (HBM-cold, 30 repeats) at each shape once
per arm, each arm a set of environment variables, rotating the arms' order every
round so clock or thermal drift falls on all of them. Each run is its own process
with its own read-bandwidth measurement, so every row carries its own floor fraction.

  python3 bench/ab_env.py --tilepath build-device/bin/tilepath --out $OUT/ab.json \\
      --arm ranges:TILEPATH_CUDA_TILE_SCHEDULE=split_ranges \\
      --arm queue:TILEPATH_CUDA_TILE_SCHEDULE=queue \\
      --shape 16,32768,k8v8,fp8_qk,k_only --shape 1,32768,k8v8,fp8_qk,k_only

Prints one line per run and a median per (shape, arm); writes all rows to --out.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from tilepath_names import CACHE_HBM_COLD  # bench/, beside this script


def run_case(tilepath, db, shape, env):
    batch, context, kv, k_path, mode = shape[:5]
    page_size = shape[5] if len(shape) > 5 else "16"
    cmd = [tilepath, "run", "--backend", "cuda", "--db", db, "--json", "--no-ablations", "--cache", CACHE_HBM_COLD,
           "--batch", batch, "--context", context, "--q-heads", "32", "--kv-heads", "8", "--head-dim", "128",
           "--page-size", page_size, "--kv", kv, "--k-path", k_path, "--mode", mode, "--repeats", "30"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    if proc.returncode != 0:
        print("failed:", " ".join(cmd), proc.stderr[-400:], file=sys.stderr)
        return None
    rec = json.loads(proc.stdout)
    if rec.get("status") != "ok":
        print("not ok:", rec.get("message"), file=sys.stderr)
        return None
    return dict(rec["measurements"], message=rec.get("message"))


def parse_arm(text):
    label, _, assignments = text.partition(":")
    env = {}
    for a in filter(None, assignments.split(",")):
        name, _, value = a.partition("=")
        env[name] = value
    return label, env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tilepath", required=True)
    ap.add_argument("--arm", action="append", required=True, help="LABEL:NAME=VALUE[,NAME=VALUE] (LABEL: alone: no change)")
    ap.add_argument("--shape", action="append", required=True, help="batch,context,kv,k_path,mode[,page_size (16)]")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    arms = [parse_arm(a) for a in args.arm]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for s in args.shape:
                order = arms[r % len(arms):] + arms[:r % len(arms)]
                for label, env in order:
                    rec = run_case(args.tilepath, f"{tmp}/ab.sqlite", s.split(","), dict(os.environ, **env))
                    if not rec:
                        continue
                    row = {"shape": s, "arm": label, "env": env, "round": r, "latency_us": rec.get("latency_us"),
                           "floor_fraction": rec.get("floor_fraction"),
                           "read_bandwidth_gbps": rec.get("read_bandwidth_gbps"),
                           "stream_same_bytes_us": rec.get("stream_same_bytes_us"), "message": rec.get("message")}
                    rows.append(row)
                    print(json.dumps({k: row[k] for k in ("shape", "arm", "round", "latency_us", "floor_fraction")}),
                          flush=True)
    for s in args.shape:
        for label, _ in arms:
            lat = [x["latency_us"] for x in rows if x["shape"] == s and x["arm"] == label and x["latency_us"]]
            frac = [x["floor_fraction"] for x in rows if x["shape"] == s and x["arm"] == label and x["floor_fraction"]]
            if lat:
                print(f"{s} {label}: median {statistics.median(lat):.1f} us, floor fraction "
                      f"{statistics.median(frac):.3f} over {len(lat)} runs")
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
