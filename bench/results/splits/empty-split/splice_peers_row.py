#!/usr/bin/env python3
"""Replaces the rows of bench/results/h200-peers.json whose shape a newer bench/peers.py file
measured (call 2 measures only the row whose launch the split policy changes); every other row
stays as its call measured it. Refuses a newer file with a shape the file of record lacks, or a
row missing a value (a failed measurement) that the file of record has.

  python3 bench/results/splits/empty-split/splice_peers_row.py <call 2's h200-peers.json> \
      [--record bench/results/h200-peers.json]
"""
import argparse
import json
import sys

SHAPE = ("batch", "context", "q_heads", "kv_heads", "head_dim", "page_size")


def shape_of(row):
    return tuple(row[k] for k in SHAPE)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("newer")
    ap.add_argument("--record", default="bench/results/h200-peers.json")
    args = ap.parse_args()
    with open(args.record) as f:
        text = f.read()
    record = json.loads(text)
    with open(args.newer) as f:
        newer = {shape_of(r): r for r in json.load(f)}
    known = {shape_of(r) for r in record}
    unknown = [s for s in newer if s not in known]
    if not newer or unknown:
        sys.exit(f"{args.newer}: no rows, or shapes the file of record lacks: {unknown}")
    for r in record:
        lost = [k for k, v in r.items() if v is not None and newer.get(shape_of(r), r).get(k) is None]
        if lost:
            sys.exit(f"{args.newer}: the row {dict(zip(SHAPE, shape_of(r)))} lacks what the file of record has: {lost}")
    spliced = [newer.get(shape_of(r), r) for r in record]
    with open(args.record, "w") as f:
        json.dump(spliced, f, indent=1)  # as bench/peers.py writes it
        f.write("\n" if text.endswith("\n") else "")
    for s in newer:
        print("replaced", dict(zip(SHAPE, s)))


if __name__ == "__main__":
    main()
