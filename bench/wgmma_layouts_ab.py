#!/usr/bin/env python3
"""The wgmma CTA layouts side by side: one table row per case of a sweep spec run once per
layout (bench/wgmma-cta-layouts.json, bench/results/wgmma-cta-layouts/), each layout in one or
more databases (rounds), plain or xz-compressed.

  python3 bench/wgmma_layouts_ab.py \\
      --arm one-head=r/one-head-round1.sqlite,r/one-head-round2.sqlite \\
      --arm two-heads=r/two-heads-round1.sqlite,r/two-heads-round2.sqlite

(The databases of bench/results/wgmma-cta-layouts/ also hold a third layout, since removed: two
tile groups per kv head, kernel names with _tg2.)

Per case and layout: the median latency over the rounds (us), its load_only ablation, the
ratio to the byte floor (1 / floor_fraction of each round, averaged) and the kernel that ran;
the last columns give each layout's latency over the first layout's.
"""
import argparse
import contextlib
import statistics

from make_performance_md import open_db, xz_db  # bench/, beside this script

CASE_COLUMNS = "head_dim, q_heads, kv_heads, batch, context, splits, k_path, mode"


@contextlib.contextmanager
def any_db(path):
    """A read-only connection to a plain or xz-compressed database."""
    if path.endswith(".xz"):
        with xz_db(path) as con:
            yield con
        return
    con = open_db(path)
    try:
        yield con
    finally:
        con.close()


def cases_of(path):
    """{case tuple: (kernel name, splits used, {measurement: value})} of one database's ok cases."""
    out = {}
    with any_db(path) as con:
        rows = con.execute(f"SELECT id, {CASE_COLUMNS}, kernel_name, splits_used FROM cases WHERE status = 'ok'")
        for case_id, *rest in rows.fetchall():
            key, kernel, splits_used = tuple(rest[:8]), rest[8], rest[9]
            m = dict(con.execute("SELECT name, value FROM measurements WHERE case_id = ?", (case_id,)).fetchall())
            out[key] = (kernel, splits_used, m)
    return out


def layout_name(kernel):
    return "two-heads" if "_kvh2" in kernel else "tile-groups" if "_tg2" in kernel else "one-head"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arm", action="append", required=True, help="LABEL=DB[,DB...] (rounds of one layout)")
    args = ap.parse_args()
    arms = []
    for a in args.arm:
        label, _, paths = a.partition("=")
        arms.append((label, [cases_of(p) for p in paths.split(",") if p]))
    keys = sorted(set().union(*(set(r) for _, rounds in arms for r in rounds)))
    head = "| D | Hq/Hk | B | S | splits | K path | mode |"
    for label, _ in arms:
        head += f" {label} us | load_only | x floor | kernel (splits) |"
    for label, _ in arms[1:]:
        head += f" {label} / {arms[0][0]} |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for k in keys:
        d, hq, hk, b, s, splits, path, mode = k
        row = f"| {d} | {hq}/{hk} | {b} | {s} | {splits or 'policy'} | {path} | {mode} |"
        medians = []
        for _, rounds in arms:
            runs = [r[k] for r in rounds if k in r]
            lat = [m["latency_us"] for _, _, m in runs if m.get("latency_us")]
            lo = [m["latency_load_only_us"] for _, _, m in runs if m.get("latency_load_only_us")]
            xf = [1.0 / m["floor_fraction"] for _, _, m in runs if m.get("floor_fraction")]
            med = statistics.median(lat) if lat else None
            medians.append(med)
            kernel = f"{layout_name(runs[0][0])} ({runs[0][1]})" if runs else "-"
            row += (f" {med:.2f} |" if med else " - |") + (f" {statistics.median(lo):.2f} |" if lo else " - |")
            row += (f" {statistics.mean(xf):.3f} |" if xf else " - |") + f" {kernel} |"
        for med in medians[1:]:
            row += f" {med / medians[0]:.3f} |" if med and medians[0] else " - |"
        print(row)


if __name__ == "__main__":
    main()
