#!/usr/bin/env python3
"""Issues 5 and 18 peers benchmark, run on the GPU machine (backends/cuda/scripts/device_run.sh peers).

For each shape (page 16, HBM-cold; B, S, Hq/Hk and D per row, SHAPES below) it measures, in one run:
  * tilepath's CUDA kernels through the CLI (`tilepath run --json --no-ablations`):
    every K8/V8 path, mode and matrix instruction family (`--mma mma_sync|wgmma`; the
    fastest is reported, and `variant` names it; a case the backend refuses is skipped),
    K16/V8 and K16/V16 (the faster family of each, named in `variant_k16v8` and
    `variant_k16v16`), and the read bandwidth of the project's streaming read
    kernel (same process);
  * for every row bench/paged_read_bound compiles in, `paged_bound_us`: the paged read of the
    shape's K8/V8 bytes through the same page table with no attention math, run just before
    that row's tilepath cases at each split count the binary compiles for the shape, the
    fastest kept (split_read_merge where split, split_read where not; `paged_bound_reader`
    names it). The B=1 and few-kv-head rows' targets are set against it: there it is null,
    with a note, without --paged-read-bound or when the binary fails or lacks the shape;
  * torch.nn.functional.scaled_dot_product_attention on the same shapes in BF16
    with the cuDNN and the flash backends (contiguous K/V, GQA);
  * the unfused FP8 path a user would write today: E4M3 K/V with per-head scales, cast to
    BF16, then SDPA (cuDNN, else the default backend); in its fastest form (`unfused_fp8_us`)
    the scales are folded into q and the output, so K and V are only cast; the form that
    multiplies K and V by their scales is timed beside it (`unfused_fp8_scaled_kv_us`).
Peers are timed with CUDA events, median of --repeats (30) after warm-up, with L2 flushed
(a read of a buffer of 4x L2) before every timed launch.
Writes a JSON list of rows (issue 5's format, plus the variants timed, `paged_bound_us` and the
second unfused form) to --out after every row, so a time limit keeps the rows already measured.

Each row runs 12 tilepath processes (and paged_read_bound once per compiled split count of
its shape) and the torch peers; --shapes runs a subset, e.g.
  --shapes 1,32768,8,1,128 32,32768,8,1,128
"""
import argparse
from collections import namedtuple
import json
import statistics
import subprocess
import sys
import tempfile

from tilepath_names import (CACHE_HBM_COLD, KPATH_FP8_QK, KPATH_K16, KPATH_TRANSFORM, KV_K8V8, KV_K16V8,
                            KV_K16V16, MMA_MMA_SYNC, MMA_WGMMA, MODE_FULL, MODE_K_ONLY,
                            MODE_NONE)  # bench/, beside this script


# One row's shape; spec() is how --shapes and paged_read_bound's --shape spell it.
Shape = namedtuple("Shape", "batch context q_heads kv_heads head_dim")
Shape.spec = lambda s: ",".join(map(str, s))

SHAPES = [
    # issue 5: Hq/Hk 32/8, D = 128
    Shape(64, 4096, 32, 8, 128), Shape(16, 32768, 32, 8, 128), Shape(128, 2048, 32, 8, 128),
    Shape(1, 32768, 32, 8, 128), Shape(4, 65536, 32, 8, 128),
    # issue 18: other head dims and head counts at B=64, S=4096 (targets against their byte floors) ...
    Shape(64, 4096, 32, 8, 64), Shape(64, 4096, 32, 8, 256), Shape(64, 4096, 32, 32, 128),
    Shape(64, 4096, 64, 8, 128),
    # ... and one kv head at S=32768 (targets against the paged split-read + merge bound)
    Shape(1, 32768, 8, 1, 128), Shape(32, 32768, 8, 1, 128),
]
PAGE = 16
# (k_path, mode, mma): every K8/V8 variant; the wgmma kernels exist for full and k_only.
# separate_kv is left out: in the bundled database it is slower than full and k_only at every
# cold shape these rows time (K8/V8 B=64 S=4096: 203 vs 131 us; B=1 S=32768: 46.8 vs 27.6;
# K16/V8 full beats it but at B=1 S=2048), and each candidate is a process of device time.
K8V8_VARIANTS = [(path, mode, mma) for mma in (MMA_MMA_SYNC, MMA_WGMMA) for path in (KPATH_TRANSFORM, KPATH_FP8_QK)
                 for mode in (MODE_FULL, MODE_K_ONLY)]
# The 16-bit caches on both matrix instruction families (the wgmma kernels of K16/V8 and K16/V16
# take BF16 K from the TMA ring); the fastest is reported and named.
K16V8_VARIANTS = [(KPATH_K16, MODE_FULL, mma) for mma in (MMA_MMA_SYNC, MMA_WGMMA)]
K16V16_VARIANTS = [(KPATH_K16, MODE_NONE, mma) for mma in (MMA_MMA_SYNC, MMA_WGMMA)]
PAGED_BOUND_TIMEOUT_S = 120


def variant_label(kv, k_path, mode, mma):
    """The variant as OperatingPoint::variant_label spells it (mma_sync, the default, unnamed)."""
    label = f"{kv}/{k_path}"
    if mode != MODE_NONE:
        label += f"/{mode}"
    if mma != MMA_MMA_SYNC:
        label += f"/{mma}"
    return label


def wants_paged_bound(shape):
    """The rows whose targets are set against the paged split-read + merge bound: B=1, few kv heads."""
    return shape.batch == 1 or shape.kv_heads <= 2


def bound_reader(splits):
    """paged_read_bound's row with the plugin's structure at `splits`: the split read and, where
    the shape is split, the PDL-launched merge kernel after it."""
    return "split_read_merge" if splits > 1 else "split_read"


def compiled_splits(shapes, shape):
    """The split counts paged_read_bound compiles for `shape` (its --list output), in order."""
    return sorted(e["splits"] for e in shapes
                  if (e["batch"], e["context"], e["q_heads"], e["kv_heads"], e["head_dim"]) == tuple(shape))


def fastest_bound(results):
    """(median us, reader label) of the fastest of paged_read_bound's results, one JSON object per
    split count, each read through bound_reader(its splits); (None, None) when none has that row."""
    best = (None, None)
    for result in results:
        splits = result["shape"]["splits"]
        row = next((r for r in result["rows"] if r["name"] == bound_reader(splits)), None)
        if row and (best[0] is None or row["median_us"] < best[0]):
            where = f"{splits} splits of {result['shape']['split_tokens']} tokens" if splits > 1 else "unsplit"
            best = (row["median_us"], f"{bound_reader(splits)}, {where}")
    return best


def tilepath_case(tilepath, db, shape, kv, k_path, mode, mma, repeats):
    """The measurements of one `tilepath run`, or None (printed why) when it failed or was refused."""
    cmd = [tilepath, "run", "--backend", "cuda", "--db", db, "--json", "--no-ablations", "--cache", CACHE_HBM_COLD,
           "--batch", str(shape.batch), "--context", str(shape.context), "--q-heads", str(shape.q_heads),
           "--kv-heads", str(shape.kv_heads), "--head-dim", str(shape.head_dim), "--page-size", str(PAGE),
           "--kv", kv, "--k-path", k_path, "--mode", mode, "--mma", mma, "--repeats", str(repeats)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    try:
        rec = json.loads(proc.stdout)
    except json.JSONDecodeError:
        print("tilepath failed:", " ".join(cmd), proc.stdout[-500:], proc.stderr[-500:], file=sys.stderr)
        return None
    if rec.get("status") != "ok":
        print("tilepath case not ok:", variant_label(kv, k_path, mode, mma), shape.spec(), rec.get("message"),
              file=sys.stderr)
        return None
    return rec["measurements"]


def best_variant(tilepath, db, shape, kv, variants, repeats):
    """(variant label, measurements) of the fastest of `variants` that ran, or (None, None)."""
    runs = [(variant_label(kv, *v), tilepath_case(tilepath, db, shape, kv, *v, repeats)) for v in variants]
    ok = [(label, m) for label, m in runs if m and m.get("latency_us")]
    return min(ok, key=lambda r: r[1]["latency_us"]) if ok else (None, None)


def run_json(cmd):
    """(parsed stdout, None) of a command that prints JSON, or (None, why)."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PAGED_BOUND_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"{' '.join(cmd)} ran past {PAGED_BOUND_TIMEOUT_S} s"
    except OSError as e:
        return None, f"{' '.join(cmd)}: {e}"
    try:
        return json.loads(proc.stdout), None
    except ValueError:
        return None, f"{' '.join(cmd)} failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}"


def paged_bound(binary, shape, repeats):
    """(median us, reader label, None) of the fastest paged read of the shape's K8/V8 bytes over
    the split counts bench/paged_read_bound compiles for it (fastest_bound), or (None, None, why)."""
    if not binary:
        return None, None, "paged_bound_us: no --paged-read-bound binary given"
    shapes, why = run_json([binary, "--list"])
    if why:
        return None, None, f"paged_bound_us: {why}"
    splits = compiled_splits(shapes, shape)
    if not splits:
        return None, None, f"paged_bound_us: paged_read_bound does not compile {shape.spec()} in"
    results = []
    for n in splits:
        result, why = run_json([binary, str(max(5, repeats)), "--shape", f"{shape.spec()},{n}"])
        if why:
            return None, None, f"paged_bound_us: {why}"
        results.append(result)
    us, reader = fastest_bound(results)
    if us is None:
        return None, None, f"paged_bound_us: no {bound_reader(2)} or {bound_reader(1)} row at {shape.spec()}"
    print(f"paged_read_bound {shape.spec()}: {us:.3f} us ({reader}; split counts tried: {splits})", flush=True)
    return us, reader, None


def torch_peers(shape, repeats):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    batch, context, hq, hk, d = shape
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(1234 + batch)
    q = torch.randn(batch, hq, 1, d, device=dev, dtype=torch.bfloat16, generator=g)
    k = torch.randn(batch, hk, context, d, device=dev, dtype=torch.bfloat16, generator=g)
    v = torch.randn(batch, hk, context, d, device=dev, dtype=torch.bfloat16, generator=g)
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    flush_buf = torch.empty(4 * l2 // 4, dtype=torch.float32, device=dev).fill_(1.0)

    def time_cold(fn, warmup=5):
        for _ in range(warmup):
            fn()
        samples = []
        for _ in range(repeats):
            flush_buf.sum()  # read 4x L2: nothing of the case stays cached
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            stop.record()
            torch.cuda.synchronize()
            samples.append(start.elapsed_time(stop) * 1000.0)
        return statistics.median(samples)

    def sdpa(backend, kk, vv):
        def run():
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, kk, vv, enable_gqa=True)
        return run

    out = {}
    for name, backend in (("cudnn_us", SDPBackend.CUDNN_ATTENTION), ("flash_us", SDPBackend.FLASH_ATTENTION)):
        try:
            out[name] = time_cold(sdpa(backend, k, v))
        except Exception as e:  # backend refuses the shape: record null and why
            out[name] = None
            out.setdefault("notes", []).append(f"{name}: {type(e).__name__}: {str(e)[:200]}")

    # Unfused FP8: E4M3 cache with per-kv-head scales, cast to BF16, then SDPA. Softmax(q·(s_k·K)ᵀ)·(s_v·V)
    # is softmax((s_k·q)·Kᵀ)·V·s_v, so the fastest form scales the one query row and the output
    # per head (each q head takes its kv head's scales) and only casts K and V.
    k_scale = (k.abs().amax(dim=(0, 2, 3), keepdim=True).float() / 448.0)
    v_scale = (v.abs().amax(dim=(0, 2, 3), keepdim=True).float() / 448.0)
    k8 = (k.float() / k_scale).to(torch.float8_e4m3fn)
    v8 = (v.float() / v_scale).to(torch.float8_e4m3fn)
    del k, v
    torch.cuda.empty_cache()
    group = hq // hk
    k_scale_q = k_scale.repeat_interleave(group, dim=1).to(torch.bfloat16)  # (1, Hq, 1, 1)
    v_scale_q = v_scale.repeat_interleave(group, dim=1).to(torch.bfloat16)

    def sdpa_fp8(qq, kk, vv):
        try:
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(qq, kk, vv, enable_gqa=True)
        except RuntimeError:
            return F.scaled_dot_product_attention(qq, kk, vv, enable_gqa=True)

    def unfused_folded():
        return sdpa_fp8(q * k_scale_q, k8.to(torch.bfloat16), v8.to(torch.bfloat16)) * v_scale_q

    def unfused_scaled_kv():
        kk = (k8.to(torch.bfloat16) * k_scale.to(torch.bfloat16))
        vv = (v8.to(torch.bfloat16) * v_scale.to(torch.bfloat16))
        return sdpa_fp8(q, kk, vv)

    # The two forms compute the same attention up to BF16 rounding: a fold that disagreed would be
    # timing something else.
    a, b = unfused_folded().float(), unfused_scaled_kv().float()
    rel = ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()
    out["unfused_fp8_fold_rel_diff"] = rel
    if not rel < 0.05:
        out.setdefault("notes", []).append(f"unfused_fp8_us: the folded form differs from the scaled one by {rel:.3g}")
    out["unfused_fp8_us"] = time_cold(unfused_folded)
    out["unfused_fp8_scaled_kv_us"] = time_cold(unfused_scaled_kv)
    return out


def parse_shape(text):
    """B,S,Hq,Hk,D (Hq,Hk,D default to 32,8,128) -> Shape."""
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        values = []
    if not 2 <= len(values) <= 5 or min(values, default=0) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected B,S[,Hq,Hk[,D]] (positive integers), e.g. 1,32768,8,1,128")
    return Shape(*(values + [32, 8, 128][len(values) - 2:]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tilepath", required=True, help="path to the tilepath CLI")
    ap.add_argument("--out", required=True, help="output JSON file")
    ap.add_argument("--paged-read-bound", metavar="PATH",
                    help="bench/paged_read_bound built for this GPU: paged_bound_us of every row it compiles in")
    ap.add_argument("--shapes", nargs="+", type=parse_shape, metavar="B,S,Hq,Hk,D", default=SHAPES,
                    help="the rows to run, in this order (default: all of SHAPES: " +
                         " ".join(s.spec() for s in SHAPES) + ")")
    ap.add_argument("--repeats", type=int, default=30,
                    help="timed launches per tilepath case, torch peer and paged bound (default 30; the bound "
                         "takes at least 5)")
    args = ap.parse_args()
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        db = f"{tmp}/peers.sqlite"
        for shape in args.shapes:
            batch, context, hq, hk, d = shape
            # first: the same call's bound, before the row's cases
            bound_us, reader, note = paged_bound(args.paged_read_bound, shape, args.repeats)
            notes = [note] if note and wants_paged_bound(shape) else []
            variant, k8v8 = best_variant(args.tilepath, db, shape, KV_K8V8, K8V8_VARIANTS, args.repeats)
            variant_k16v8, k16v8 = best_variant(args.tilepath, db, shape, KV_K16V8, K16V8_VARIANTS, args.repeats)
            variant_k16v16, k16v16 = best_variant(args.tilepath, db, shape, KV_K16V16, K16V16_VARIANTS,
                                                  args.repeats)
            ref = k8v8 or k16v16 or {}
            bw = ref.get("read_bandwidth_gbps")
            row = {"batch": batch, "context": context, "q_heads": hq, "kv_heads": hk, "head_dim": d, "page_size": PAGE,
                   "floor_k8v8_us": (k8v8["bytes_moved"] / (bw * 1e3)) if (k8v8 and bw) else None,
                   "floor_k16v16_us": (k16v16["bytes_moved"] / (bw * 1e3)) if (k16v16 and bw) else None,
                   "tilepath_k8v8_us": k8v8["latency_us"] if k8v8 else None,
                   "variant": variant,  # the K8/V8 variant of tilepath_k8v8_us
                   "tilepath_k16v8_us": k16v8["latency_us"] if k16v8 else None,
                   "variant_k16v8": variant_k16v8,
                   "tilepath_k16v16_us": k16v16["latency_us"] if k16v16 else None,
                   "variant_k16v16": variant_k16v16,
                   # the read kernel over the K8/V8 case's bytes, same cold timing: a perfect stream
                   "stream_k8v8_us": k8v8.get("stream_same_bytes_us") if k8v8 else None,
                   "read_bandwidth_gbps": bw}
            if wants_paged_bound(shape) or bound_us is not None:
                row["paged_bound_us"] = bound_us
                row["paged_bound_reader"] = reader
            try:
                row.update(torch_peers(shape, args.repeats))
            except Exception as e:
                row.update({"cudnn_us": None, "flash_us": None, "unfused_fp8_us": None, "unfused_fp8_scaled_kv_us": None,
                            "notes": [f"torch peers failed: {type(e).__name__}: {str(e)[:300]}"]})
            if notes:
                row["notes"] = notes + row.get("notes", [])
            print(json.dumps(row), flush=True)
            rows.append(row)
            with open(args.out, "w") as f:  # after every shape: a time limit keeps what was measured
                json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
