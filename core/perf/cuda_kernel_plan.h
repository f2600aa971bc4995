#pragma once
// What the CUDA backend launches for an operating point, as host arithmetic that the
// kernels (backends/cuda/kernels/decode_traits.cuh), the launcher
// (backends/cuda/kernels/decode_launch.cu) and the GPU model of our kernels
// (core/perf/cuda_latency_model.h) share: warps and ring depth per CTA, CTAs per SM,
// kv heads per CTA, the split-KV count and the tile size.
// tests/core/test_cuda_kernel_model.cpp checks the model's plan against what the backend
// launched for every bundled case. Header-only and dependency-free, so nvcc compiles it
// into the kernels.

namespace tilepath::perf::cuda_plan {

// Warps x ring stages per CTA (decode_traits.cuh says why these shapes).
struct RingShape {
  int mma_warps;
  int stages;
};

inline constexpr int kSmemPerBlockMax = 227 * 1024;
inline constexpr int kSmemPerBlockFor2PerSm = 113 * 1024;  // 228 KB/SM, 1 KB reserved per block
inline constexpr int kSmemPerBlockFor4PerSm = 56 * 1024;
inline constexpr int kSmemPerSm = 228 * 1024;
inline constexpr int kSmemReservedPerBlock = 1024;
inline constexpr int kMaxThreadsPerSm = 2048;
inline constexpr int kWarpTokens = 32;  // tokens per warp per pipeline tile
inline constexpr int kHeadsPerCta = 8;  // query heads one CTA holds (the n8 side of PV)

constexpr int ring_bytes(const RingShape& r, int raw_stage_bytes, int staged_bytes_per_warp) {
  return r.mma_warps * (r.stages * raw_stage_bytes + staged_bytes_per_warp);
}

// separate_kv is limited by its converter warps (one per MMA warp), so its shape is as
// many converter/MMA pairs per SM as the staged 16-bit slots allow.
constexpr RingShape choose_separate_kv_shape(int raw_stage_bytes, int staged_bytes_per_warp) {
  constexpr RingShape two_per_sm[] = {{4, 4}, {4, 3}, {4, 2}};
  // Not {3, 3} (two tiles in flight per converter, one pair fewer): for the mixed dtypes
  // it is slower than {4, 2} (k8v16 B=64,S=4096: 332 vs 289 us, docs/perf-notes.md,
  // "separate_kv"): the converter warps, not the bytes in flight, limit this mode.
  constexpr RingShape one_per_sm[] = {{4, 4}, {4, 3}, {4, 2}, {2, 3}, {2, 2}, {1, 2}};
  for (const RingShape& r : two_per_sm)
    if (ring_bytes(r, raw_stage_bytes, staged_bytes_per_warp) <= kSmemPerBlockFor2PerSm) return r;
  for (const RingShape& r : one_per_sm)
    if (ring_bytes(r, raw_stage_bytes, staged_bytes_per_warp) <= kSmemPerBlockMax) return r;
  return {0, 0};
}

// First a shape that fits 4 CTAs per SM (B=64 x Hk=8 = 512 CTAs in one wave of 528):
// 3 stages for FP8 K and V, 2 for the mixed dtypes (a 3-stage mixed ring would fit only
// 3 per SM: 1.3 waves, with a thin tail). Otherwise the deepest ring that fits (BF16:
// 2 per SM, two even waves at B=64).
constexpr RingShape choose_ring_shape(int raw_stage_bytes, int staged_bytes_per_warp, bool separate_kv) {
  if (separate_kv) return choose_separate_kv_shape(raw_stage_bytes, staged_bytes_per_warp);
  constexpr RingShape preferred[] = {{2, 3}, {2, 2}, {1, 3}, {1, 2}};
  for (const RingShape& r : preferred)
    if (ring_bytes(r, raw_stage_bytes, staged_bytes_per_warp) <= kSmemPerBlockFor4PerSm) return r;
  for (const RingShape& r : preferred)
    if (ring_bytes(r, raw_stage_bytes, staged_bytes_per_warp) <= kSmemPerBlockMax) return r;
  return {0, 0};
}

// Tokens per split: split s covers [s·t, (s+1)·t) of every request; a multiple of 32.
inline int split_tokens_for(int max_len, int splits) {
  splits = splits < 1 ? 1 : splits;
  const int len = max_len < 1 ? 1 : max_len;
  const int t = ((len + splits - 1) / splits + 31) / 32 * 32;
  return t < 32 ? 32 : t;
}

// Split-KV count for small batch x long context: enough CTAs to fill sm_count SMs at
// ~4 CTAs per SM, minimising waves x (tokens per split + ~one warp tile round per split).
inline int choose_splits(int batch, int kv_heads, int max_len, int sm_count) {
  constexpr int kCtasPerSmGuess = 4, kMinTokensPerSplit = 256, kMaxSplits = 128;
  if (batch < 1 || kv_heads < 1 || max_len < 1 || sm_count < 1) return 1;
  const long long ctas = static_cast<long long>(batch) * kv_heads;
  const long long slots = static_cast<long long>(sm_count) * kCtasPerSmGuess;
  if (ctas >= slots) return 1;
  int most = max_len / kMinTokensPerSplit;
  most = most < 1 ? 1 : (most > kMaxSplits ? kMaxSplits : most);
  int best = 1;
  double best_cost = 1e300;
  for (int s = 1; s <= most; ++s) {
    const long long cta_count = ctas * s;
    const double waves = static_cast<double>((cta_count + slots - 1) / slots);
    const double cost = waves * (static_cast<double>(max_len) / s + 128.0);
    if (cost < best_cost * 0.999) {
      best_cost = cost;
      best = s;
    }
  }
  return best;
}

// Kv heads one CTA covers (1 or 2). Two kv heads per CTA read the same pages: for K8/V8 at
// D=128 that is 2-5% faster from 4096 tokens per CTA up (B=16/S=32768 +3.3%, B=64/S=32768
// +5%, B=4/S=65536 +2.2%, B=64/S=4096 +0.3%) and slower below (B=16/S=8192 -1%, B=1/S=32768
// -4%); K16/V16 is not faster (-1.3% at B=16/S=32768) (bench/results/ab/h200-ab-kv-heads-per-cta*.json).
// separate_kv pairs its converter and MMA warps within one kv head, so it keeps one.
inline int kv_heads_per_cta_for(bool k8v8, bool separate_kv, int head_dim, int kv_heads, int split_tokens) {
  constexpr int kTwoHeadMinTokensPerCta = 4096;
  return k8v8 && !separate_kv && head_dim == 128 && kv_heads % 2 == 0 && split_tokens >= kTwoHeadMinTokensPerCta ? 2
                                                                                                                 : 1;
}

}  // namespace tilepath::perf::cuda_plan
