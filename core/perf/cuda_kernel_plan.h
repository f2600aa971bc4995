#pragma once
// What the CUDA backend launches for an operating point, as host arithmetic that the
// kernels (backends/cuda/kernels/decode_traits.cuh), the launcher
// (backends/cuda/kernels/decode_launch.cu) and the GPU model of our kernels
// (core/perf/cuda_latency_model.h) share: warps and ring depth per CTA, CTAs per SM,
// kv heads per CTA, the split-KV count and the tile size, for both matrix instruction families.
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
inline constexpr int kMaxCtasPerSm = 32;
inline constexpr int kSmPartitions = 4, kRegistersPerPartition = 16384, kRegisterUnit = 256;
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

// CTAs per SM that shared memory, threads and (when known, > 0) registers allow, as the
// runtime's occupancy counts them (tests/gpu check that they agree for every compiled main
// kernel). Registers are allocated per warp in units of 256 from each of the SM's four
// 16K-register partitions, so a partition holds whole warps only.
constexpr int ctas_per_sm_for(int smem_bytes, int threads, int regs_per_thread = 0) {
  threads = threads < 1 ? 1 : threads;
  int ctas = kSmemPerSm / (smem_bytes + kSmemReservedPerBlock);
  if (kMaxThreadsPerSm / threads < ctas) ctas = kMaxThreadsPerSm / threads;
  if (regs_per_thread > 0) {
    const int regs_per_warp = (regs_per_thread * 32 + kRegisterUnit - 1) / kRegisterUnit * kRegisterUnit;
    const int warps = kSmPartitions * (kRegistersPerPartition / regs_per_warp);
    const int warps_per_cta = (threads + 31) / 32;
    if (warps / warps_per_cta < ctas) ctas = warps / warps_per_cta;
  }
  return ctas < kMaxCtasPerSm ? ctas : kMaxCtasPerSm;
}

// The matrix instruction family of a kernel (OperatingPoint::mma, DecodeArgs::mma).
enum class MmaFamily { mma_sync, wgmma };

// CTAs per SM a split grid fills at most: past these, more CTAs bring no more bytes from
// HBM, only a shorter pipeline per CTA and more partials to combine.
// - mma.sync: 4 (D = 64 fits 8 per SM: B = 64, S = 4096 split to fill 8 took 112 us against
//   84 unsplit).
// - wgmma: 2 (its TMA ring keeps three 64-token K and V tiles in flight per CTA). At
//   S = 32768, cold: Hq/Hk 32/8 B = 1, 32 splits 25.5 us against 27.3 at the 66 that fill 4
//   per SM; 8/1 B = 32, 8 splits 73.1 us against 75.4 at 16 (fp8_qk/k_only; the transform
//   path alike: bench/results/splits). At the split shapes of the floor targets 3 and 4 per SM
//   are 4-7% slower too (B = 16, S = 32768: 252 us at 2 splits, 267 at 3 and 4; B = 4,
//   S = 65536: 130 at 8, 137-139 at 12 and 16; bench/results/wgmma-ring/, call 6).
constexpr int max_filled_ctas_per_sm(MmaFamily family) { return family == MmaFamily::wgmma ? 2 : 4; }

// Split-KV count: `streams` CTAs per split (batch x kv heads x query-head chunks, one kv
// head per CTA) over sm_count x min(ctas_per_sm, max_filled_ctas_per_sm(family)) slots,
// ctas_per_sm being the main kernel's occupancy. A grid smaller than one wave of those slots
// splits until they are full and stays one wave; a grid of a wave or more stays unsplit
// (B = 64, S = 4096: two waves of half splits measured 14% slower than one wave,
// docs/perf-notes.md "Split-KV policy"). A kernel that fits fewer CTAs per SM (K16/V16,
// separate_kv, wgmma at D = 256) gets the grid of its own occupancy (separate_kv 3-27%
// faster than a grid sized for 4 per SM). Splits keep at least 256 tokens (below that the
// combine and the per-split prologue outweigh the parallelism) and are at most 128. Only the
// splits that hold tokens are launched: split_tokens_for rounds a split up to 32 tokens, so the
// last of the splits that fill the slots can start past the context (33 splits of 32768 tokens
// are 1024 long, and 32 cover them); an empty split would still start its CTAs and add a
// partial to every row's combine.
inline int choose_splits(long long streams, int max_len, int sm_count, int ctas_per_sm, MmaFamily family) {
  constexpr int kMinTokensPerSplit = 256, kMaxSplits = 128;
  if (streams < 1 || max_len < 1 || sm_count < 1) return 1;
  const int cap = max_filled_ctas_per_sm(family);
  const int filled_per_sm = ctas_per_sm < 1 ? 1 : (ctas_per_sm > cap ? cap : ctas_per_sm);
  const long long slots = static_cast<long long>(sm_count) * filled_per_sm;
  const long long fill = slots / streams;
  long long most = max_len / kMinTokensPerSplit;
  most = most < 1 ? 1 : (most > kMaxSplits ? kMaxSplits : most);
  const int filling = static_cast<int>(fill < 1 ? 1 : (fill < most ? fill : most));
  const int split_tokens = split_tokens_for(max_len, filling);
  return (max_len + split_tokens - 1) / split_tokens;
}

// The wgmma kernels (backends/cuda/kernels/decode_wgmma.cuh, WgmmaTraits): 4 consumer warps
// and a producer warp, 64-token tiles, one kv head per CTA, a ring of K and V tiles as they
// sit in HBM (k_bytes, v_bytes: 1 for E4M3, 2 for BF16), the Q and P operand tiles and a
// little bookkeeping.
inline constexpr int kWgmmaTileTokens = 64;
inline constexpr int kWgmmaConsumerWarps = 4;
inline constexpr int kWgmmaThreads = 32 * (kWgmmaConsumerWarps + 1);
// Ring slots: 4 where 4 of them take at most 48 KB, else 3, so that a CTA stays under 56 KB
// and 4 CTAs share an SM (4 slots of 16 KB left 3 per SM: a second, mostly empty wave at
// 512 CTAs, K8/V8 at D = 128 and K16/V16 at D = 64 alike).
constexpr int wgmma_stage_bytes(int head_dim, int k_bytes, int v_bytes) {
  return kWgmmaTileTokens * head_dim * (k_bytes + v_bytes);  // a K tile and a V tile
}
constexpr int wgmma_stages(int stage_bytes) { return 4 * stage_bytes <= 48 * 1024 ? 4 : 3; }
// Page sizes the wgmma kernels' TMA boxes tile: a box is a page (8, 16 or 32 tokens) or 32
// tokens of a longer page; shorter boxes would not fill a 1024-byte swizzle atom. The other
// page sizes (1, 2 and 4 tokens among them) run the wgmma kernels whose ring the producer fills
// with 16-byte cp.async gathers (backends/cuda/kernels/decode_wgmma.cuh, WgmmaCpAsyncRingTraits).
constexpr bool wgmma_tma_tiles_pages(int page_size) {
  return page_size >= 8 && (page_size <= 32 ? 32 % page_size == 0 : page_size % 32 == 0);
}
// Producer warps of a wgmma CTA. The TMA ring's one warp issues a box per page piece; the
// cp.async ring (pages the boxes do not tile) issues every 16-byte chunk itself, so a one-head
// CTA has two, one for K and one for V: 1-5% faster than one warp's gathers at 1-token pages,
// at the same CTAs per SM (bench/results/wgmma-cp-async-producers/). A two-head CTA keeps one:
// with a tenth warp its registers at the same CTAs per SM would spill.
constexpr int wgmma_producer_warps(bool cp_async_ring, int kv_heads_per_cta) {
  return cp_async_ring && kv_heads_per_cta == 1 ? 2 : 1;
}
// Threads of a wgmma CTA: its consumer warpgroups (one per kv head) and its producer warps.
constexpr int wgmma_threads(int warpgroups, int producer_warps = 1) {
  return 32 * (kWgmmaConsumerWarps * warpgroups + producer_warps);
}
// kv_heads_per_cta 2: each ring slot holds both heads' tiles. Each consumer warpgroup has its
// own operand tiles and bookkeeping in a 1024-byte aligned block.
constexpr int wgmma_smem_bytes(int head_dim, int k_bytes, int v_bytes, bool q_fp8, int kv_heads_per_cta = 1) {
  const int stage = kv_heads_per_cta * wgmma_stage_bytes(head_dim, k_bytes, v_bytes);
  const int q_tile = (8 * head_dim * (q_fp8 ? 1 : 2) + 1023) / 1024 * 1024;
  const int p_tile = 8 * 128;
  const int row_max = kWgmmaConsumerWarps * 8 * 4, q_scales = 8 * 4, l_sums = kWgmmaConsumerWarps * 8 * 4;
  const int warpgroup_block = q_tile + p_tile + row_max + q_scales + l_sums;
  const int stages = wgmma_stages(stage);
  return stages * stage + (kv_heads_per_cta - 1) * ((warpgroup_block + 1023) / 1024 * 1024) + warpgroup_block +
         2 * stages * 8 + 1024;
}

// Kv heads one wgmma CTA covers (1 or 2): two for K8/V8 at D = 64 (the kernels of
// decode_wgmma_two_heads.cu: a consumer warpgroup per head, one TMA box over both heads'
// adjacent 64-byte rows into a 128-byte ring row). Against one head per CTA, in two alternating
// rounds on the H200 (bench/results/wgmma-d64-wide-rows/, call 1): 0.74-0.97x at 7 of 8
// shapes (B = 1 to 128, S = 2048 to 65536, every K path and mode); at B = 64, S = 4096 0.90x
// for fp8_qk k_only, the fastest (1.148x its byte floor against 1.282x), 0.97-1.01x for the
// others (their two-head compute, not the ring, sets the time there). One elsewhere: D = 128
// with query groups was slower (up to 1.42x split), Hq/Hk 32/32 at D = 128 only 2% faster
// (bench/results/wgmma-cta-layouts/), and the 16-bit caches have no two-head kernel.
inline int wgmma_kv_heads_per_cta_for(bool k8v8, int head_dim, int kv_heads) {
  return k8v8 && head_dim == 64 && kv_heads % 2 == 0 ? 2 : 1;
}

// CTAs of adjacent kv heads (of one request and split) that a K8/V8 wgmma grid launches as one
// thread-block cluster: 2 where the grid runs more than one wave of the GPU's CTA slots, else 1.
// In the first wave the block scheduler starts a request's kv heads together, in index order;
// later CTAs start one by one as slots free up, so the heads that read the same scattered pages
// read them at unrelated times. A cluster starts its pair together on one GPC. On the H200
// (cold, three rounds; bench/results/wgmma-cluster/, call 2): K8/V8 grids of 2-4 waves took
// 0.975-1.003 of the unclustered launch's time, 0.987 in geometric mean over 14 cases (Hq/Hk
// 32/32 at B = 64, S = 4096: 0.975; 32/8 at B = 128: 0.980-0.991); the 16-bit caches' kernels
// 0.996-1.010, 0.9995 in geometric mean, so they launch no clusters. Clusters of 4 and 8 were
// 5-25% slower at most shapes (call 1).
inline int wgmma_cluster_kv_heads(bool k8v8, long long ctas, long long slots, int kv_head_ctas) {
  return k8v8 && slots > 0 && ctas > slots && kv_head_ctas % 2 == 0 ? 2 : 1;
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
