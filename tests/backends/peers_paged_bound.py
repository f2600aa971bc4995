#!/usr/bin/env python3
"""bench/peers.py's paged bound: which of paged_read_bound's split counts and rows it keeps.

A stand-in for bench/paged_read_bound (a script that answers --list and --shape B,S,Hq,Hk,D,splits
with canned JSON) checks that peers.py runs every compiled split count of a row's shape, keeps the
fastest of split_read_merge (split) and split_read (unsplit) and never a faster row of another
reader, and says why when the shape is not compiled in or the binary fails.

  python3 tests/backends/peers_paged_bound.py SOURCE_DIR
"""
import importlib.util
import json
import os
import stat
import sys
import tempfile

SHAPES = [{"batch": 16, "context": 32768, "q_heads": 32, "kv_heads": 8, "head_dim": 128, "splits": s} for s in (4, 2, 8)]
SHAPES += [{"batch": 64, "context": 4096, "q_heads": 32, "kv_heads": 8, "head_dim": 128, "splits": 1}]


def result(splits, rows):
    return {"shape": {"splits": splits, "split_tokens": 32768 // splits},
            "rows": [{"name": n, "median_us": us} for n, us in rows.items()]}


# Per split count: split_read_merge is the bound where split; split_read alone (faster, no merge)
# must not be taken then.
RESULTS = {
    4: result(4, {"split_read": 240.0, "split_read_merge": 252.0}),
    2: result(2, {"split_read": 239.0, "split_read_merge": 246.5}),
    8: result(8, {"split_read": 238.0, "split_read_merge": 250.0}),
    1: result(1, {"split_read": 120.5, "stream_project": 117.0}),
}


def fake_binary(folder):
    """A stand-in for paged_read_bound that logs its arguments."""
    path = os.path.join(folder, "paged_read_bound")
    log = os.path.join(folder, "calls.txt")
    with open(path, "w") as f:
        f.write(f"""#!{sys.executable}
import json, sys
open({log!r}, "a").write(" ".join(sys.argv[1:]) + "\\n")
if sys.argv[1:] == ["--list"]:
    print(json.dumps({SHAPES!r}))
    sys.exit(0)
splits = int(sys.argv[3].split(",")[-1])
results = {json.dumps({str(k): v for k, v in RESULTS.items()})!r}
print(json.dumps(json.loads(results)[str(splits)]))
""")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path, log


def main():
    sys.path.insert(0, os.path.join(sys.argv[1], "bench"))
    spec = importlib.util.spec_from_file_location("peers", os.path.join(sys.argv[1], "bench", "peers.py"))
    peers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peers)
    failures = []

    def expect(what, got, want):
        if got != want:
            failures.append(f"{what}: {got!r}, expected {want!r}")

    split_shape = peers.Shape(16, 32768, 32, 8, 128)
    expect("compiled split counts", peers.compiled_splits(SHAPES, split_shape), [2, 4, 8])
    expect("fastest of the split counts", peers.fastest_bound([RESULTS[4], RESULTS[2], RESULTS[8]]),
           (246.5, "split_read_merge, 2 splits of 16384 tokens"))
    expect("unsplit: the split read", peers.fastest_bound([RESULTS[1]]), (120.5, "split_read, unsplit"))
    expect("no reader row", peers.fastest_bound([result(2, {"split_read": 1.0})]), (None, None))
    with tempfile.TemporaryDirectory() as tmp:
        binary, log = fake_binary(tmp)
        expect("paged_bound at a split shape", peers.paged_bound(binary, split_shape, 30)[:2],
               (246.5, "split_read_merge, 2 splits of 16384 tokens"))
        calls = open(log).read().split("\n")
        expect("the binary's calls", calls[:4], ["--list", "30 --shape 16,32768,32,8,128,2", "30 --shape 16,32768,32,8,128,4",
                                                "30 --shape 16,32768,32,8,128,8"])
        us, reader, why = peers.paged_bound(binary, peers.Shape(128, 2048, 32, 8, 128), 30)
        expect("a shape not compiled in", (us, reader), (None, None))
        if not why or "does not compile 128,2048,32,8,128 in" not in why:
            failures.append(f"a shape not compiled in: no reason given ({why!r})")
        us, reader, why = peers.paged_bound(os.path.join(tmp, "missing"), split_shape, 30)
        if us is not None or not why:
            failures.append(f"a missing binary: {us!r}, {why!r}")
    for f in failures:
        print("FAIL:", f)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
