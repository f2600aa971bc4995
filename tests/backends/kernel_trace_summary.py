#!/usr/bin/env python3
"""bench/kernel_trace.py's ring summary on a synthetic trace of known values.

Two launches of a full wgmma kernel (the summary keeps the last) and one of its load_only, two
CTAs each, at 2 cycles per ns: the per-tile sums, the work's parts, the steady interval and
the CTA ends must come out as constructed, and a TW line without its TR line is not read.

  python3 tests/backends/kernel_trace_summary.py SOURCE_DIR
"""
import importlib.util
import os
import sys
import tempfile


def tr(x, g0, g9, tile0, loop, tiles):
    merge = 2 * (g9 - g0)  # cycles: 2 per ns
    return (f"TR {x} 0 0 sm {x} g0 {g0} g9 {g9} prolog 100 wait 10 q 50 tile0 {tile0} cons0 {tile0 + 10} "
            f"cons1 {tile0 + 20} loop {loop} joined {loop + 5} merge {merge} tiles {tiles}")


def tw(x, load_only, land_wait, work, free_wait, tiles, parts=(0, 0, 0, 0)):
    return (f"TW {x} 0 0 load_only {load_only} land_wait {land_wait} work {work} free_wait {free_wait} tiles {tiles} "
            f"qk {parts[0]} softmax {parts[1]} v_prep {parts[2]} pv {parts[3]}")


def summarise_lines(summarise, lines):
    """summarise (kernel_trace's summarise or summarise_ring) of a trace file holding `lines`."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.txt")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return summarise(path)


def check_start_steps(kt):
    """The wgmma TR lines' start steps: medians in ns, in the order of the CTA's start (before the
    first copy out, `prolog`), and a trace of a build before the stamps still summarised."""
    start = "param {} page {} len {} sync {} producer {} issue {}"
    lines = [  # two CTAs at 2 cycles per ns; medians 700 / 800 / 820 / 900 / 1000 / 1400 ns
        tr(0, 0, 5000, 4000, 9000, 4) + " " + start.format(1300, 1500, 1540, 1700, 1900, 2700),
        tr(1, 0, 5000, 4000, 9000, 4) + " " + start.format(1500, 1700, 1740, 1900, 2100, 2900),
    ]
    failures = []
    summary = summarise_lines(kt.summarise, lines)
    before_stamps = summarise_lines(kt.summarise, [tr(x, 0, 5000, 4000, 9000, 4) for x in (0, 1)])
    print(summary)
    steps = [l.split() for l in summary.splitlines()[1:]]
    found = {s[0]: s[2] for s in steps}
    for key, ns in (("param", "700"), ("page", "800"), ("len", "820"), ("sync", "900"), ("producer", "1000"),
                    ("issue", "1400"), ("prolog", "50")):
        if found.get(key) != ns:
            failures.append(f"start step {key}: {found.get(key)} ns, expected {ns}")
    order = [s[0] for s in steps]
    if order[:8] != ["wait", "param", "page", "len", "sync", "producer", "issue", "prolog"]:
        failures.append(f"start steps out of order: {order[:8]}")
    if "param" in before_stamps or "prolog" not in before_stamps:
        failures.append("a trace without the start stamps must still be summarised, without them")
    return failures


def main():
    spec = importlib.util.spec_from_file_location("kernel_trace", os.path.join(sys.argv[1], "bench", "kernel_trace.py"))
    kt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kt)
    tiles = 11
    lines = [
        # an earlier launch of the full kernel: other values, must be ignored
        tr(0, 0, 500, 100, 900, tiles), tw(0, 0, 9999, 9999, 9999, tiles),
        tr(1, 0, 500, 100, 900, tiles), tw(1, 0, 9999, 9999, 9999, tiles),
        # the last launch of the full kernel: per tile 200 / 400 / 600 cycles = 100 / 200 / 300 ns,
        # steady interval (2100 - 100) cycles / 10 tiles / 2 = 100 ns; ends 1000 and 3000 ns after
        # the first start
        # the work's parts 1100 / 1320 / 880 / 1100 cycles = 50 / 60 / 40 / 50 ns per tile
        tr(0, 10000, 11000, 100, 2100, tiles), tw(0, 0, 2200, 4400, 6600, tiles, (1100, 1320, 880, 1100)),
        tr(1, 10500, 13000, 100, 2100, tiles), tw(1, 0, 2200, 4400, 6600, tiles, (1100, 1320, 880, 1100)),
        # a TW line with no TR line before it is skipped
        tw(7, 0, 1, 1, 1, tiles),
        # the load_only kernel: per tile 10 / 20 / 30 ns
        tr(0, 20000, 20400, 50, 1050, tiles), tw(0, 1, 220, 440, 660, tiles),
        tr(1, 20000, 20400, 50, 1050, tiles), tw(1, 1, 220, 440, 660, tiles),
    ]
    summary = summarise_lines(kt.summarise_ring, lines)
    without_tw = summarise_lines(kt.summarise_ring, [l for l in lines if l.startswith("TR")])
    print(summary)
    failures = []
    full = [l for l in summary.splitlines() if l.strip().startswith("full")]
    load_only = [l for l in summary.splitlines() if l.strip().startswith("load_only")]
    if len(full) != 1 or len(load_only) != 1:
        failures.append("expected one full and one load_only line")
    else:
        for text in ("2 CTAs x 11 tiles", "land_wait 100 ns", "work 200 ns", "free_wait 300 ns",
                     "steady interval 100 ns", "p10 1000", "p99 3000"):
            if text not in full[0]:
                failures.append(f"full: missing {text!r}")
        parts = [l for l in summary.splitlines() if "work's parts" in l]
        if len(parts) != 1:
            failures.append("expected one line of the work's parts (the full kernel's)")
        for text in ("qk 50 ns", "softmax 60 ns", "v_prep 40 ns", "pv 50 ns"):
            if parts and text not in parts[0]:
                failures.append(f"full: missing {text!r}")
        for text in ("land_wait 10 ns", "work 20 ns", "free_wait 30 ns", "steady interval 50 ns"):
            if text not in load_only[0]:
                failures.append(f"load_only: missing {text!r}")
    if without_tw is not None:
        failures.append("a trace without TW lines must give no ring summary")
    failures += check_start_steps(kt)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
