#!/usr/bin/env python3
"""Writes the sweep spec of the wgmma / mma.sync load_only A/B (bench/wgmma-vs-mma-sync-load-only.json):
every bundled K8/V8 and K8/V16 fp8_qk shape where the wgmma case is within --margin of its
mma.sync twin or slower (both caches), and the floor-target shapes, each run on both matrix
instruction families in one process, each kernel beside its load_only ablation.

  python3 bench/wgmma_ab_spec.py --db data/h200-sweep.sqlite --margin 0.02 > bench/wgmma-vs-mma-sync-load-only.json

docs/performance.md ("Where the wgmma fp8_qk path is slower than mma.sync, and why") reads the
result from bench/results/wgmma-vs-mma-sync-load-only/.
"""
import argparse
import json
import sqlite3

from make_performance_md import FAMILY_PAIRS  # bench/, beside this script

# issue 18's floor-target shapes (D = 128, Hq/Hk 32/8 unless named), always in the A/B
FLOOR_TARGETS = [(64, 4096, {}), (16, 32768, {}), (4, 65536, {}), (128, 2048, {}), (128, 1024, {}),
                 (64, 2048, {}), (16, 8192, {}), (16, 16384, {}), (4, 32768, {}), (64, 4096, {"head_dim": 64}),
                 (1, 32768, {"head_dim": 64})]
BASE = {"kv": "k8v8", "k_path": "fp8_qk", "mode": "k_only", "q_heads": 32, "kv_heads": 8, "head_dim": 128,
        "page_size": 16}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", default="data/h200-sweep.sqlite")
    ap.add_argument("--margin", type=float, default=0.02, help="wgmma / mma.sync above 1 - margin is in the A/B")
    args = ap.parse_args()
    con = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    rows = con.execute("SELECT DISTINCT a.kv, a.mode, a.batch, a.context, a.q_heads, a.kv_heads, a.head_dim, "
                       "a.page_size " + FAMILY_PAIRS + " AND la.value > lb.value * ? "
                       "ORDER BY a.kv, a.mode, a.head_dim, a.q_heads, a.kv_heads, a.page_size, a.batch, a.context",
                       (1.0 - args.margin,)).fetchall()
    points, seen = [], set()

    def add(point):
        full = {**BASE, **point}
        key = tuple(sorted(full.items()))
        if key not in seen:
            seen.add(key)
            points.append({k: v for k, v in full.items() if k in ("batch", "context") or BASE.get(k) != v})

    for batch, context, extra in FLOOR_TARGETS:
        add({"batch": batch, "context": context, **extra})
    for r in rows:
        add({k: r[k] for k in r.keys()})
    spec = {
        "name": "h200-wgmma-vs-mma-sync-load-only",
        "description": (f"Each kernel beside its load_only ablation (the same CTA, ring and prologue, no per-tile "
                        f"compute), both matrix instruction families in one process, both caches: issue 18's "
                        f"floor-target shapes and every bundled fp8_qk shape where wgmma is within "
                        f"{args.margin:.0%} of mma.sync or slower ({len(points)} shapes; written by "
                        f"bench/wgmma_ab_spec.py --margin {args.margin}); the mma.sync kernels have a load_only at "
                        f"D = 128 only; bench/results/wgmma-vs-mma-sync-load-only/."),
        "backend": "cuda",
        "settings": {"warmup": 5, "repeats": 30, "stage_costs": True, "tile_interval": False, "gpu_model": "h200"},
        "base": BASE,
        "points": points,
        "axes": {"mma": ["mma_sync", "wgmma"], "cache": ["hbm_cold", "l2_warm"]},
    }
    print(json.dumps(spec, indent=2))


if __name__ == "__main__":
    main()
