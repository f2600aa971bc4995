#!/usr/bin/env python3
"""Summarise the per-CTA phase stamps of a trace build of the CUDA plugin.

A build configured with -DCMAKE_CUDA_FLAGS=-DTILEPATH_KERNEL_TRACE makes every CTA of the
decode kernel print one line at its end (device printf):

  TR <blockIdx.x> <y> <z> sm <smid> g0 <globaltimer at start> g9 <at end>
     prolog <cycles> wait <c> q <c> tile0 <c> cons0 <c> cons1 <c> loop <c> joined <c> merge <c> tiles <n>

with clock64 cycles since the CTA started at: ring prologue issued, grid-dependency wait
passed, Q fragment ready (incl. the fused q_quant), first tile's data visible, first and second
tile consumed, last tile consumed (warp 0), every warp of the CTA done (the merge starts),
output written; the split combine's blocks print
`TC <x> <y> g0 <start> released <grid dependency passed> g9 <end>` (globaltimer). Every launch prints, so run one case with
`tilepath run ... --repeats 1 --warmup 0 --no-ablations`; this script keeps the last launch
(the last N lines, N = distinct CTAs) and prints medians in ns (cycles over the CTA's own
cycles-per-ns) and the spread of CTA end times. printf perturbs the timing: use the phases,
not the trace build's latency.

The wgmma kernels do not printf (a call in the kernel makes ptxas serialise every wgmma): their
CTAs write the same stamps to a buffer that the plugin prints after each launch, each TR line
followed by the ring's line

  TW <x> <y> <z> load_only <0|1> land_wait <c> work <c> free_wait <c> tiles <n>
     qk <c> softmax <c> v_prep <c> pv <c>

(cycles summed over the CTA's tiles: the first consumer thread waiting for tiles to land, its
work from a tile's landing to the tile's end, the producer's first lane waiting for free ring
slots; then the work's parts: qk from the landing, softmax, v_prep up to the slot's release,
and the rest of the tile: the rescale, the barrier for Pᵀ and pv). Those launches are
summarised by kernel (full or load_only) and tile count, so a run with ablations gives the
full kernel and its load_only side by side: per tile the sums and the work's parts, the
steady interval (last tile consumed - first tile landed) / (tiles - 1), and the CTA end times
after the launch's first start (percentiles).

Usage: tilepath run ... > out.txt; python3 bench/kernel_trace.py out.txt   (or out.txt.gz)
"""
import gzip
import statistics
import sys

# The wgmma kernels' TR lines end with the steps of the CTA's start before its first request, as
# the producer's first lane sees them: param (a kernel parameter read), page (the first
# page-table entry arrived), len (the request's length arrived), sync (past the barriers' set-up),
# producer (its first instruction), issue (its first copy about to be issued).
PHASES = ["wait", "param", "page", "len", "sync", "producer", "issue", "prolog", "q", "tile0", "cons0", "cons1", "loop",
          "joined", "merge"]


def summarise(path):
    text = (gzip.open(path, "rt") if path.endswith(".gz") else open(path)).read().splitlines()
    lines = [l.split() for l in text if l.startswith("TR ")]
    if not lines:
        return f"{path}: no TR lines (was the plugin built with -DTILEPATH_KERNEL_TRACE?)"
    ctas = len({tuple(l[1:4]) for l in lines})
    last = lines[-ctas:]

    def field(l, key):
        return int(l[l.index(key) + 1])

    start = min(field(l, "g0") for l in last)
    ghz = statistics.median(field(l, "merge") / (field(l, "g9") - field(l, "g0"))
                            for l in last if field(l, "g9") > field(l, "g0"))
    ends = [field(l, "g9") - start for l in last]
    out = [f"{path}: {ctas} CTAs, {ghz:.2f} cycles/ns; CTA end after the first start: "
           f"min {min(ends)} med {statistics.median(ends):.0f} max {max(ends)} ns"]
    combine = [l.split() for l in text if l.startswith("TC ")]
    if combine:  # the last launch's combine blocks (as many lines as blocks), times from the first main CTA start
        blocks = len({tuple(l[1:3]) for l in combine})
        combine = combine[-blocks:]
        starts = [field(l, "g0") - start for l in combine]
        released = [field(l, "released") - start for l in combine]
        done = [field(l, "g9") - start for l in combine]
        out.append(f"  combine ({blocks} blocks): first start {min(starts)} ns, released (grid dependency) "
                   f"median {statistics.median(released):.0f} (min {min(released)}, max {max(released)}), "
                   f"end median {statistics.median(done):.0f}, last {max(done)} ns")
    for key in PHASES:
        if key not in last[0]:  # traces of builds before the stamp existed
            continue
        values = [field(l, key) / ghz for l in last if 0 < field(l, key) < 1 << 40]  # unset stamps are garbage
        if values:
            out.append(f"  {key:7s} median {statistics.median(values):8.0f} ns  (min {min(values):.0f}, max {max(values):.0f})")
    return "\n".join(out)


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def summarise_ring(path):
    """The TW lines (wgmma kernels), each joined with the TR line before it."""
    text = (gzip.open(path, "rt") if path.endswith(".gz") else open(path)).read().splitlines()
    records, previous = [], None
    for line in text:
        fields = line.split()
        if fields[:1] == ["TW"] and previous and previous[1:4] == fields[1:4]:
            records.append(previous + fields[4:])
        previous = fields if fields[:1] == ["TR"] else None
    if not records:
        return None

    def field(r, key):
        return int(r[r.index(key) + 1])

    groups = {}
    for r in records:
        groups.setdefault((field(r, "load_only"), field(r, "tiles")), []).append(r)
    out = [f"{path}: ring (TW lines), the last launch of each kernel and tile count"]
    for (load_only, tiles), rs in sorted(groups.items()):
        last = rs[-len({tuple(r[1:4]) for r in rs}):]
        ghz = statistics.median(field(r, "merge") / (field(r, "g9") - field(r, "g0"))
                                for r in last if field(r, "g9") > field(r, "g0"))
        start = min(field(r, "g0") for r in last)
        ends = [field(r, "g9") - start for r in last]
        keys = ["land_wait", "work", "free_wait"] + [k for k in ("qk", "softmax", "v_prep", "pv") if k in last[0]]
        per_tile = {key: statistics.median(field(r, key) / max(1, field(r, "tiles")) / ghz for r in last)
                    for key in keys}
        steady = [(field(r, "loop") - field(r, "tile0")) / ghz / (field(r, "tiles") - 1)
                  for r in last if field(r, "tiles") > 1]
        out.append(f"  {'load_only' if load_only else 'full':9s} {len(last)} CTAs x {tiles} tiles: per tile "
                   f"land_wait {per_tile['land_wait']:.0f} ns, work {per_tile['work']:.0f} ns, "
                   f"free_wait {per_tile['free_wait']:.0f} ns, steady interval "
                   f"{statistics.median(steady) if steady else float('nan'):.0f} ns; CTA ends p10 "
                   f"{percentile(ends, 0.1)} p50 {percentile(ends, 0.5)} p90 {percentile(ends, 0.9)} "
                   f"p99 {percentile(ends, 0.99)} ns")
        if "qk" in per_tile and not load_only:
            out.append("            work's parts per tile: " +
                       ", ".join(f"{k} {per_tile[k]:.0f} ns" for k in ("qk", "softmax", "v_prep", "pv")))
    return "\n".join(out)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for p in sys.argv[1:]:
        print(summarise(p))
        ring = summarise_ring(p)
        if ring:
            print(ring)
