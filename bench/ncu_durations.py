#!/usr/bin/env python3
"""Kernel-by-kernel GPU durations from an `ncu --csv --page raw --metrics gpu__time_duration.sum`
log (device_run.sh's `breakdown` step).

Writes the launches in order as a small CSV (order, kernel, grid, duration_us) and prints one
line per shape: the median of the decode and combine kernels, and the stream-read launches
after the last decode launch (the CLI's L2 flush and its read of the case's own bytes, which
use the same kernel, alternate there).
"""
import argparse
import csv
import statistics
import sys

# The decode step's main kernels (core/perf/ncu_csv.h, is_main_decode_kernel): the mma.sync
# family's and the wgmma family's.
MAIN_KERNELS = ("decode_attention_kernel", "decode_wgmma_kernel")
TO_US = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}


def short_kernel_name(name):
    """decode_wgmma_kernel of "void tilepath::cuda::kernels::decode_wgmma_kernel<...>(WgmmaParams)"."""
    return name.split("(")[0].split("<")[0].split()[-1].split("::")[-1]


def read_launches(path):
    """parse_launches of one file."""
    with open(path, errors="replace") as fh:
        return parse_launches(fh.read(), path)


def parse_launches(text, source):
    """Every launch of `ncu --csv --page raw --print-units base` output, in order: dicts of
    `kernel` (short name), `grid` and `metrics` (metric -> (value or None, unit)). The application's
    own lines around the CSV (ncu's ==PROF== lines, `tilepath run`'s summary) are skipped; `name` is
    the kernel as ncu names it."""
    rows = list(csv.reader(line for line in text.splitlines() if line.startswith('"')))
    if len(rows) < 3 or "Kernel Name" not in rows[0]:
        raise SystemExit(f"{source}: no ncu rows")
    head, units = rows[0], rows[1]
    out = []
    for r in rows[2:]:
        metrics = {}
        for col, cell, unit in zip(head, r, units):
            try:
                metrics[col] = (float(cell.replace(",", "")), unit)
            except ValueError:
                metrics[col] = (None, unit)
        name = r[head.index("Kernel Name")]
        out.append({"kernel": short_kernel_name(name), "name": name, "grid": r[head.index("Grid Size")],
                    "metrics": metrics})
    return out


def launches(path):
    """(kernel, grid, duration_us) of every launch of a breakdown log."""
    for launch in read_launches(path):
        value, unit = launch["metrics"]["gpu__time_duration.sum"]
        yield launch["kernel"], launch["grid"], value * TO_US[unit]


def kernel_durations(seq):
    """(kernel, duration_us) of launches given as (kernel, grid, duration_us)."""
    return [(k, d) for k, _, d in seq]


def reads_after_last_decode(durations):
    """Durations of the read-kernel launches after the last decode launch: the CLI's L2 flush and
    its stream over the case's own bytes, alternating (flush first)."""
    last = max((i for i, (k, _) in enumerate(durations) if k in MAIN_KERNELS), default=-1)
    return [d for k, d in durations[last + 1:] if k == "stream_read_kernel"]


def compact_summary(path):
    """Medians from a --compact file: decode, combine (None without splits) and the stream over
    the case's bytes (bench/make_performance_md.py's kernel-by-kernel table)."""
    with open(path) as fh:
        durations = [(r["kernel"], float(r["duration_us"])) for r in csv.DictReader(fh)]
    med = lambda xs: statistics.median(xs) if xs else None
    return {"decode": med([d for k, d in durations if k in MAIN_KERNELS]),
            "combine": med([d for k, d in durations if k == "combine_kernel"]),
            "stream": med(reads_after_last_decode(durations)[1::2])}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ncu_csv")
    ap.add_argument("--compact", help="write the launches as order,kernel,grid,duration_us here")
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    seq = list(launches(a.ncu_csv))
    if a.compact:
        with open(a.compact, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["order", "kernel", "grid", "duration_us"])
            for i, (k, g, d) in enumerate(seq):
                w.writerow([i, k, g, f"{d:.3f}"])
    durations = kernel_durations(seq)
    parts = []
    for kernel in MAIN_KERNELS + ("combine_kernel",):
        d = [t for k, t in durations if k == kernel]
        if d:
            parts.append(f"{kernel} x{len(d)} median {statistics.median(d):.2f} us (min {min(d):.2f})")
    after = reads_after_last_decode(durations)
    if after:
        parts.append("stream_read_kernel after it: " + " ".join(f"{t:.1f}" for t in after))
    print(f"{a.label}: " + "; ".join(parts))


if __name__ == "__main__":
    sys.exit(main())
