#!/usr/bin/env python3
"""Issue 5 peers benchmark, run on the GPU machine (backends/cuda/scripts/device_run.sh peers).

For each shape (Hq/Hk = 32/8, D = 128, page 16, HBM-cold) it measures, in one run:
  * tilepath's CUDA kernels through the CLI (`tilepath run --json --no-ablations`):
    every K8/V8 path and mode (the best is reported), K16/V8 (best mode) and K16/V16,
    and the read bandwidth of the project's streaming read kernel (same process);
  * torch.nn.functional.scaled_dot_product_attention on the same shapes in BF16
    with the cuDNN and the flash backends (contiguous K/V, GQA);
  * the unfused FP8 path a user would write today: E4M3 K/V with per-head scales,
    dequantized to BF16, then SDPA (cuDNN, else the default backend).
Peers are timed with CUDA events, median of 30 after warm-up, with L2 flushed
(a read of a buffer of 4x L2) before every timed launch.
Writes a JSON list of rows (issue 5's format) to --out.
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile

from tilepath_names import (CACHE_HBM_COLD, KPATH_FP8_QK, KPATH_K16, KPATH_TRANSFORM, KV_K8V8, KV_K16V8,
                            KV_K16V16, MODE_FULL, MODE_K_ONLY, MODE_NONE, MODE_SEPARATE_KV)  # bench/, beside this script

SHAPES = [(64, 4096), (16, 32768), (128, 2048), (1, 32768), (4, 65536)]
HQ, HK, D, PAGE = 32, 8, 128, 16
K8V8_VARIANTS = [(path, mode) for path in (KPATH_TRANSFORM, KPATH_FP8_QK)
                 for mode in (MODE_FULL, MODE_K_ONLY, MODE_SEPARATE_KV)]
K16V8_VARIANTS = [(KPATH_K16, MODE_FULL), (KPATH_K16, MODE_SEPARATE_KV)]


def tilepath_case(tilepath, db, batch, context, kv, k_path, mode):
    cmd = [tilepath, "run", "--backend", "cuda", "--db", db, "--json", "--no-ablations", "--cache", CACHE_HBM_COLD,
           "--batch", str(batch), "--context", str(context), "--q-heads", str(HQ), "--kv-heads", str(HK),
           "--head-dim", str(D), "--page-size", str(PAGE), "--kv", kv, "--k-path", k_path, "--mode", mode,
           "--repeats", "30"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    try:
        rec = json.loads(proc.stdout)
    except json.JSONDecodeError:
        print("tilepath failed:", " ".join(cmd), proc.stdout[-500:], proc.stderr[-500:], file=sys.stderr)
        return None
    if rec.get("status") != "ok":
        print("tilepath case not ok:", kv, k_path, mode, rec.get("message"), file=sys.stderr)
        return None
    return rec["measurements"]


def best(measurements):
    ok = [m for m in measurements if m and m.get("latency_us")]
    return min(ok, key=lambda m: m["latency_us"]) if ok else None


def torch_peers(batch, context):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(1234 + batch)
    q = torch.randn(batch, HQ, 1, D, device=dev, dtype=torch.bfloat16, generator=g)
    k = torch.randn(batch, HK, context, D, device=dev, dtype=torch.bfloat16, generator=g)
    v = torch.randn(batch, HK, context, D, device=dev, dtype=torch.bfloat16, generator=g)
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    flush_buf = torch.empty(4 * l2 // 4, dtype=torch.float32, device=dev).fill_(1.0)

    def time_cold(fn, warmup=5, repeats=30):
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

    # Unfused FP8: E4M3 cache with per-head scales, dequantize to BF16, then SDPA.
    k_scale = (k.abs().amax(dim=(0, 2, 3), keepdim=True).float() / 448.0)
    v_scale = (v.abs().amax(dim=(0, 2, 3), keepdim=True).float() / 448.0)
    k8 = (k.float() / k_scale).to(torch.float8_e4m3fn)
    v8 = (v.float() / v_scale).to(torch.float8_e4m3fn)
    del k, v
    torch.cuda.empty_cache()

    def unfused():
        kk = (k8.to(torch.bfloat16) * k_scale.to(torch.bfloat16))
        vv = (v8.to(torch.bfloat16) * v_scale.to(torch.bfloat16))
        try:
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(q, kk, vv, enable_gqa=True)
        except RuntimeError:
            return F.scaled_dot_product_attention(q, kk, vv, enable_gqa=True)

    out["unfused_fp8_us"] = time_cold(unfused)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tilepath", required=True, help="path to the tilepath CLI")
    ap.add_argument("--out", required=True, help="output JSON file")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        db = f"{tmp}/peers.sqlite"
        for batch, context in SHAPES:
            k8v8 = best([tilepath_case(args.tilepath, db, batch, context, KV_K8V8, p, m) for p, m in K8V8_VARIANTS])
            k16v8 = best([tilepath_case(args.tilepath, db, batch, context, KV_K16V8, p, m) for p, m in K16V8_VARIANTS])
            k16v16 = tilepath_case(args.tilepath, db, batch, context, KV_K16V16, KPATH_K16, MODE_NONE)
            ref = k8v8 or k16v16 or {}
            bw = ref.get("read_bandwidth_gbps")
            row = {"batch": batch, "context": context, "q_heads": HQ, "kv_heads": HK, "head_dim": D, "page_size": PAGE,
                   "floor_k8v8_us": (k8v8["bytes_moved"] / (bw * 1e3)) if (k8v8 and bw) else None,
                   "floor_k16v16_us": (k16v16["bytes_moved"] / (bw * 1e3)) if (k16v16 and bw) else None,
                   "tilepath_k8v8_us": k8v8["latency_us"] if k8v8 else None,
                   "tilepath_k16v8_us": k16v8["latency_us"] if k16v8 else None,
                   "tilepath_k16v16_us": k16v16["latency_us"] if k16v16 else None,
                   # the read kernel over the K8/V8 case's bytes, same cold timing: a perfect stream
                   "stream_k8v8_us": k8v8.get("stream_same_bytes_us") if k8v8 else None,
                   "read_bandwidth_gbps": bw}
            try:
                row.update(torch_peers(batch, context))
            except Exception as e:
                row.update({"cudnn_us": None, "flash_us": None, "unfused_fp8_us": None,
                            "notes": [f"torch peers failed: {type(e).__name__}: {str(e)[:300]}"]})
            print(json.dumps(row), flush=True)
            rows.append(row)
            with open(args.out, "w") as f:  # after every shape: a time limit keeps what was measured
                json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
