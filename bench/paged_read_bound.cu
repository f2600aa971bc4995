// paged_read_bound: how fast can a kernel read one split-KV decode step's K/V bytes
// through the page table and merge the splits, on this GPU, with no attention math at
// all? A bound for the split-KV shapes' targets (issue 5's B=1, S=32768; issue 18's few-kv-head
// rows), measured the way the CUDA plugin times a case: HBM-cold (the plugin's L2 flush
// before each launch, outside the events), CUDA events around the work, warm-up, median of
// the repeats.
//
// Every reader loads each byte once (16-byte evict-first loads, several in flight per
// thread) and XORs what it read; nothing else. The coverage check (the XOR of all
// threads' XORs equals the data's) runs before any timing, and every merge is checked
// against a host merge of the partials the device wrote.
//
// Shapes (--shape B,S,Hq,Hk[,D[,splits]]; 16-token pages, FP8 K and V; each compiled in, as
// the kernels' loops are unrolled for it; kShapes lists them): the B = 1 and few-kv-head
// shapes 1,32768,32,8 (the default), 1,32768,8,1 and 32,32768,8,1, split as the plugin's
// mma.sync kernels are on the H200's 132 SMs; and issue 18's floor-target shapes (Hq/Hk 32/8,
// B·S >= 128k tokens, D = 128, and D = 64 at B = 64, S = 4096), where a grid of a wave or more
// is not split and a smaller one is read at both families' split counts (choose_splits of
// core/perf/cuda_kernel_plan.h: mma.sync fills 4 CTAs per SM, wgmma 2). The JSON's shape
// says the split tokens and splits the probe used and what the plugin chooses on this GPU.
//
//   stream_project        the plugin's own read kernel over a contiguous buffer of the bytes
//                         (every case's "stream_same_bytes")
//   stream_oneshot_8      one pass, each thread's 8 loads issued at once
//   split_read            the attention kernel's geometry: a CTA per (request, kv head, split),
//                         its pages looked up once, one kv head's 128-byte rows read in rounds
//                         of 8 loads per thread; writes a partial per q head
//   split_read_merge      split_read, then a PDL-launched merge kernel per (request, q head)
//                         (the plugin's structure)
//   split_read_in_order   split_read with every request's pages in order (page p of request r
//                         at r·pages + p): what the scattered pages cost, not a bound of the case
//   split_read_clusterC   split_read with the CTAs of C adjacent kv heads (2 or 8) of each
//                         (split, request) launched as a thread-block cluster: co-scheduled on one
//                         GPC, they read the same scattered pages at about the same time
//   split_read_headsH     split_read with H adjacent kv heads per CTA (2, 4 or all of them):
//                         each token's H·D bytes are contiguous, where one head's rows are
//                         kKvHeads·D bytes apart; no merge. At a shape of H times the splits of
//                         the per-head grid it runs as many CTAs of as many bytes, so the two
//                         differ only in how contiguous their loads are
//   balanced_read         the same rows dealt out evenly: one wave of 4 CTAs per SM, each an
//                         equal share of the step's (request, kv head, token) rows in that
//                         order, as a stream-K kernel would balance them; no merge
//   balanced_read_in_order
//                         balanced_read with every request's pages in order
//   balanced_read_pages   balanced_read of (request, token) rows of every kv head: whole
//                         pages, each token's kKvHeads·D bytes contiguous
//   page_window_read      the stream kernel's order through the page table: the grid reads
//                         the next 1056 whole scattered pages each step. No attention kernel
//                         reads so (a stream's tokens stay in one CTA)
//   page_oneshot_read     stream_oneshot_8's order through the page table: a CTA per four
//                         whole scattered pages, each thread's 8 loads at once
//   page_oneshot_read_4   the same with 4 loads per thread (a CTA per two pages): half as
//                         many bytes in flight
//   page_oneshot_read_one_head
//                         page_oneshot_read in a stream's order: a CTA per 64 KB of one kv
//                         head's rows (32 tokens of 128 bytes, 1 KB apart, per page)
//   page_oneshot_read_one_head_hnd, split_read_hnd
//                         page_oneshot_read_one_head and split_read with head-major pages
//                         ([page][kv head][token][d]: one kv head's page of rows contiguous,
//                         2 KB at D = 128) over the same pool bytes
// The default shape only:
//   split_read_last_merge split_read, and the last CTA of each kv head to finish merges that
//                         head's splits (an atomic ticket; no second kernel)
//   split_read_grid_sync_merge
//                         split_read as a cooperative launch; after a grid-wide barrier every
//                         CTA merges 8 of its head's outputs (no second kernel, no ticket)
//   clusterC_xT_splitsS_merge
//                         S splits per kv head in CTAs of T threads, clusters of C that merge
//                         through distributed shared memory (then, with several clusters per
//                         head, the last one merges theirs): timed only where the GPU holds
//                         every cluster of the grid at once; the JSON's cluster_designs say
//                         how many it holds
//
// After the timing, one more HBM-cold launch of split_read, split_read_hnd, page_oneshot_read,
// page_oneshot_read_one_head, page_window_read and balanced_read_pages, each CTA stamping its SM
// and the global timer at its start and end: the JSON's stamps give when each SM's last CTA
// ended (by_sm) and the SMs' mean idle share of the span after it (sm_idle_fraction), and
// gpc_of_sm which SMs share a GPC (joined from thread-block clusters).
//
// Build and run (from the repository root; the binary needs only the CUDA runtime):
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I. -o paged_read_bound \
//     bench/paged_read_bound.cu backends/cuda/read_bandwidth.cu backends/cuda/event_timer.cpp \
//     backends/cuda/l2_flush.cpp
//   ./paged_read_bound [repeats] [--shape B,S,Hq,Hk[,D[,splits]]]     (prints one JSON object)
//   ./paged_read_bound --list                                          (the compiled shapes, JSON)

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/event_timer.h"
#include "backends/cuda/l2_flush.h"
#include "backends/cuda/read_bandwidth.h"
#include "core/perf/cuda_kernel_plan.h"

namespace {

using tilepath::cuda::DeviceBuffer;
using tilepath::cuda::TimingStats;
using Xor = std::array<std::uint32_t, 4>;

// A decode step's shape: kBatch requests of kContext tokens each, kQHeads / kKvHeads
// heads, head dim kHeadDim, FP8 K and V in 16-token pages, read in splits of kSplitTokens tokens.
template <int kBatch_, int kContext_, int kQHeads_, int kKvHeads_, int kSplitTokens_, int kHeadDim_ = 128>
struct Shape {
  static constexpr int kBatch = kBatch_, kContext = kContext_, kQHeads = kQHeads_, kKvHeads = kKvHeads_;
  static constexpr int kGroup = kQHeads / kKvHeads, kHeadDim = kHeadDim_, kPageSize = 16;
  static constexpr int kSplitTokens = kSplitTokens_, kSplits = kContext / kSplitTokens;  // splits holding tokens
  static constexpr int kRowChunks = kHeadDim / 16;  // 16-byte chunks of one head's FP8 row
  static constexpr int kPages = kContext / kPageSize, kSplitPages = kSplitTokens / kPageSize;  // of one request
  // The chunks of the K pool (and again of the V pool); the merge's inputs and outputs:
  // partials [request][split][q head][d], lses [request][split][q head], out [request][q head][d].
  static constexpr std::size_t kPoolChunks = std::size_t(kBatch) * kContext * kKvHeads * kRowChunks;
  static constexpr std::size_t kOutputs = std::size_t(kBatch) * kQHeads * kHeadDim;
  static constexpr std::size_t kPartials = std::size_t(kSplits) * kOutputs;
  static constexpr std::size_t kLses = std::size_t(kBatch) * kSplits * kQHeads;
  // The merge kernel: kMergeParts threads per output, each with at most 64 splits' loads in
  // flight (two floats each: 128 registers).
  static constexpr int kMergeParts = (kSplits + 63) / 64, kMergeThreads = kMergeParts * kHeadDim;
  static_assert(kQHeads % kKvHeads == 0 && kContext % kSplitTokens == 0, "whole groups and splits");
  static_assert(kSplitTokens % 32 == 0 && kSplitTokens >= 256, "the plugin's split tokens: a multiple of 32, >= 256");
  static_assert(kSplits % kMergeParts == 0, "merge parts of equal splits");
};

// The shapes, each with the split tokens of the plugin's choose_splits on 132 SMs.
// Issue 5's B=1 target: 66 splits of 512 tokens, of which 64 hold tokens (8 x 64 CTAs).
using B1Shape = Shape<1, 32768, 32, 8, 512>;
// One kv head, B=1: 128 splits of 256 tokens (the plugin's most splits; 128 CTAs).
using B1OneKvShape = Shape<1, 32768, 8, 1, 256>;
// One kv head, B=32: 16 splits of 2048 tokens (512 CTAs, about 4 per SM).
using B32OneKvShape = Shape<32, 32768, 8, 1, 2048>;
// Issue 18's floor targets, Hq/Hk 32/8: a wave or more (B x 8 >= 512 CTAs) unsplit; B = 16
// (128 streams) in 4 splits (mma.sync) or 2 (wgmma); B = 4 (32 streams) in 16 or 8.
template <int kBatch, int kContext, int kSplits, int kHeadDim = 128>
using FloorShape = Shape<kBatch, kContext, 32, 8, kContext / kSplits, kHeadDim>;

// split_read: 256 threads per CTA, rounds of 8 loads per thread (4 CTAs per SM fit by
// registers, as the attention kernel's 4 per SM; 128 KB per SM in flight).
constexpr int kSplitThreads = 256, kRoundLoads = 8;
constexpr int kMergeBatch = 16;  // splits whose partials the last CTA requests at once

constexpr int kMaxClustersPerHead = 8;            // cluster_out / cluster_lse capacity
constexpr int kTickets = B1Shape::kKvHeads * 32;  // (head, rank) tickets of the cluster merges;
                                                  // the last-CTA merge uses kKvHeads

// The stream readers' block size (as the plugin's read kernel).
constexpr int kStreamThreads = 512;

__device__ __forceinline__ void xor_into(uint4& acc, const uint4& v) {
  acc.x ^= v.x;
  acc.y ^= v.y;
  acc.z ^= v.z;
  acc.w ^= v.w;
}

// One pass over a contiguous buffer: thread t reads chunks t, t + T, ... (T threads),
// all kLoads requested before the first use.
template <int kLoads>
__global__ void __launch_bounds__(kStreamThreads)
    oneshot_stream(const uint4* __restrict__ data, std::size_t chunks, unsigned* __restrict__ sink,
                   uint4* __restrict__ xors) {
  const std::size_t threads = std::size_t(gridDim.x) * blockDim.x;
  const std::size_t t = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  uint4 v[kLoads];
#pragma unroll
  for (int k = 0; k < kLoads; ++k)
    v[k] = t + k * threads < chunks ? __ldcs(data + t + k * threads) : make_uint4(0, 0, 0, 0);
  uint4 acc = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int k = 0; k < kLoads; ++k) xor_into(acc, v[k]);
  if ((acc.x & acc.y & acc.z & acc.w) == 0xFFFFFFFFu) sink[0] = acc.x ^ acc.w;  // never: keeps the loads
  if (xors) xors[t] = acc;
}

// Where a CTA ran, for the stamped launch after the timing: its SM and the global timer at its
// start and at its end, three words per CTA in launch order. The stamped readers are their own
// instantiations (kStamped), so that the timed kernels carry none of it: a runtime test of the
// stamps pointer made the one-head one-pass reader about 5% slower.
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(ns));
  return ns;
}

__device__ __forceinline__ void stamp_cta_end(unsigned long long* stamps, unsigned long long start) {
  __syncthreads();  // every thread's loads are back
  if (threadIdx.x != 0) return;
  unsigned sm;
  asm volatile("mov.u32 %0, %smid;" : "=r"(sm));
  const std::size_t cta = blockIdx.x + std::size_t(gridDim.x) * (blockIdx.y + std::size_t(gridDim.y) * blockIdx.z);
  stamps[3 * cta] = sm;
  stamps[3 * cta + 1] = start;
  stamps[3 * cta + 2] = global_ns();
}

// Where a page keeps its rows: token-major (the plugin's: [page][token][kv head][d], so one kv
// head's rows lie kKvHeads·D bytes apart) or head-major ([page][kv head][token][d], one kv head's
// page of rows contiguous). The same pool bytes either way; only the readers' addresses differ.
enum class Layout { kTokenMajor, kHeadMajor };

// The chunk of (kv head `head`, token `token` of the page, 16-byte part `part` of the row) in
// pool page `slot`.
template <class S, Layout kLayout>
__device__ __forceinline__ std::size_t row_chunk(std::size_t slot, int token, int head, int part) {
  if constexpr (kLayout == Layout::kTokenMajor)
    return ((slot * S::kPageSize + token) * S::kKvHeads + head) * S::kRowChunks + part;
  else
    return ((slot * S::kKvHeads + head) * S::kPageSize + token) * S::kRowChunks + part;
}

// The rows of kv heads [head, head + kHeads) in tokens [split·kTokens, +kTokens) of one request
// (its page table `page_table`), K then V, by a CTA of kThreads: the split's pages are looked
// up once (into `pages`), then rounds of kRoundLoads 16-byte loads per thread (a warp load: 512
// bytes of consecutive rows of kHeads·D bytes, the rows of one token kKvHeads·D bytes apart;
// one head's, as the attention kernel reads them, by default). Returns the thread's XOR.
template <class S, int kThreads, int kTokens, int kHeads = 1, Layout kLayout = Layout::kTokenMajor>
__device__ __forceinline__ uint4 read_split(const uint4* __restrict__ k_pool, const uint4* __restrict__ v_pool,
                                            const int* __restrict__ page_table, int* pages, int split, int head) {
  constexpr int kRowChunks = S::kRowChunks * kHeads, kPageSize = S::kPageSize;
  constexpr int kChunks = kTokens * kRowChunks, kRoundsOf = 2 * kChunks / (kThreads * kRoundLoads);
  static_assert(kChunks % (kThreads * kRoundLoads) == 0, "a round reads K or V, not both");
  const int t = threadIdx.x;
  for (int i = t; i < kTokens / kPageSize; i += kThreads) pages[i] = page_table[split * (kTokens / kPageSize) + i];
  __syncthreads();
  uint4 acc = make_uint4(0, 0, 0, 0);
#pragma unroll 1
  for (int r = 0; r < kRoundsOf; ++r) {
    const uint4* pool = r < kRoundsOf / 2 ? k_pool : v_pool;
    uint4 v[kRoundLoads];
#pragma unroll
    for (int k = 0; k < kRoundLoads; ++k) {
      const int j = ((r * kRoundLoads + k) * kThreads + t) % kChunks;
      const int row = j / kRowChunks, part = j % kRowChunks;
      const std::size_t page = pages[row / kPageSize];
      v[k] = __ldcs(pool +
                    row_chunk<S, kLayout>(page, row % kPageSize, head + part / S::kRowChunks, part % S::kRowChunks));
    }
#pragma unroll
    for (int k = 0; k < kRoundLoads; ++k) xor_into(acc, v[k]);
  }
  return acc;
}

// The running terms of a log-sum-exp merge: max m, Σ w·o and Σ w with w = e^(l - m).
struct LseSum {
  float m, num, den;
};

// The log-sum-exp terms of n partial outputs o[i] with log-sum-exps l[i].
template <int kN>
__device__ __forceinline__ LseSum lse_sum(const float (&l)[kN], const float (&o)[kN]) {
  LseSum r{-INFINITY, 0, 0};
#pragma unroll
  for (int i = 0; i < kN; ++i) r.m = fmaxf(r.m, l[i]);
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    const float w = __expf(l[i] - r.m);
    r.num += w * o[i];
    r.den += w;
  }
  return r;
}

// The log-sum-exp merge of n partial outputs o[i] with log-sum-exps l[i].
template <int kN>
__device__ __forceinline__ float lse_merge(const float (&l)[kN], const float (&o)[kN]) {
  const LseSum r = lse_sum(l, o);
  return r.num / r.den;
}

// A partial output value derived from what a thread read (the k-th of the thread's outputs:
// bytes of the XOR's words x and z, so that nothing can skip the loads).
__device__ __forceinline__ float partial_value(const uint4& acc, int k) {
  return float(((k % 2 == 0 ? acc.x : acc.z) >> (8 * (k / 2) % 32)) & 0xFFu) * 0x1p-8f;
}

enum class Merge { kNone, kSeparateKernel, kLastCta, kGridSync };

// kGridSync (a cooperative launch: every CTA resident): after a grid-wide barrier every
// CTA merges 8 of its head's 512 outputs, a warp per output, one L2 round trip.
template <class S>
__device__ __forceinline__ void grid_sync_merge(const float* __restrict__ partials, const float* __restrict__ lse,
                                                float* __restrict__ out, int split, int head) {
  constexpr int kSplits = S::kSplits, kQHeads = S::kQHeads, kGroup = S::kGroup, kHeadDim = S::kHeadDim;
  constexpr int kPerCta = kGroup * kHeadDim / kSplits;  // 8 outputs, one per warp
  static_assert(S::kBatch == 1 && kPerCta * 32 == kSplitThreads && kSplits == 64,
                "a warp per output, 2 splits per lane");
  cooperative_groups::this_grid().sync();
  const int t = threadIdx.x;
  const int o = split * kPerCta + t / 32, lane = t % 32, g = o / kHeadDim, d = o % kHeadDim;
  float l[2], v[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int sp = lane + 32 * i;
    l[i] = __ldcg(lse + sp * kQHeads + head * kGroup + g);
    v[i] = __ldcg(partials + (std::size_t(sp) * kQHeads + head * kGroup + g) * kHeadDim + d);
  }
  float m = fmaxf(l[0], l[1]);
#pragma unroll
  for (int lanes = 16; lanes > 0; lanes /= 2) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, lanes));
  const float w0 = __expf(l[0] - m), w1 = __expf(l[1] - m);
  float num = w0 * v[0] + w1 * v[1], den = w0 + w1;
#pragma unroll
  for (int lanes = 16; lanes > 0; lanes /= 2) {
    num += __shfl_xor_sync(0xFFFFFFFFu, num, lanes);
    den += __shfl_xor_sync(0xFFFFFFFFu, den, lanes);
  }
  if (lane == 0) out[head * kGroup * kHeadDim + o] = num / den;
}

// kLastCta: the last CTA of the kv head to finish merges the head's splits into `out`
// (the atomic ticket is the only cross-CTA dependency).
template <class S>
__device__ __forceinline__ void last_cta_merge(const float* __restrict__ partials, const float* __restrict__ lse,
                                               unsigned* __restrict__ tickets, float* __restrict__ out, int head) {
  constexpr int kSplits = S::kSplits, kQHeads = S::kQHeads, kGroup = S::kGroup, kHeadDim = S::kHeadDim;
  static_assert(kSplits % kMergeBatch == 0, "merge batches");
  static_assert(S::kBatch == 1 && kSplitThreads == kSplits * kGroup && kSplitThreads * 2 == kGroup * kHeadDim,
                "merge layout");
  __shared__ float split_lse[kSplits * kGroup];
  __shared__ bool last;
  const int t = threadIdx.x;
  __threadfence();  // this thread's partials are visible before the ticket is taken
  __syncthreads();
  if (t == 0) last = atomicAdd(tickets + head, 1u) == kSplits - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  split_lse[t] = __ldcg(lse + (t / kGroup) * kQHeads + head * kGroup + t % kGroup);  // [split][g]
  __syncthreads();
  // Thread t merges (q head g0 = t / 128, d) and (g0 + 2, d): per batch of splits, both
  // outputs' loads in flight (4 L2 round trips in all, within 64 registers).
  const int g0 = t / kHeadDim, d = t % kHeadDim;
  float m[2] = {-INFINITY, -INFINITY}, num[2] = {0, 0}, den[2] = {0, 0};
#pragma unroll
  for (int i = 0; i < 2; ++i)
    for (int s = 0; s < kSplits; ++s) m[i] = fmaxf(m[i], split_lse[s * kGroup + g0 + 2 * i]);
#pragma unroll 1
  for (int s0 = 0; s0 < kSplits; s0 += kMergeBatch) {
    float o[2][kMergeBatch];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int s = 0; s < kMergeBatch; ++s)
        o[i][s] = __ldcg(partials + (std::size_t(s0 + s) * kQHeads + head * kGroup + g0 + 2 * i) * kHeadDim + d);
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int s = 0; s < kMergeBatch; ++s) {
        const float w = __expf(split_lse[(s0 + s) * kGroup + g0 + 2 * i] - m[i]);
        num[i] += w * o[i][s];
        den[i] += w;
      }
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) out[(head * kGroup + g0 + 2 * i) * kHeadDim + d] = num[i] / den[i];
  if (t == 0) tickets[head] = 0;  // ready for the next launch
}

// A CTA per (split, kv head, request): look up the split's pages once, read the head's K
// then V rows (a warp load = 4 rows of 128 bytes, as the attention kernel reads them), then
// write its q heads' partial outputs and log-sum-exps (values derived from what it read).
// kLastCta and kGridSync (the default shape only) merge within this kernel.
template <class S, Merge kMerge>
__global__ void __launch_bounds__(kSplitThreads, 4)
    split_read(const uint4* __restrict__ k_pool, const uint4* __restrict__ v_pool, const int* __restrict__ page_table,
               float* __restrict__ partials, float* __restrict__ lse, unsigned* __restrict__ tickets,
               float* __restrict__ out, unsigned* __restrict__ sink, uint4* __restrict__ xors) {
  if constexpr (kMerge == Merge::kSeparateKernel) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  constexpr int kSplits = S::kSplits, kQHeads = S::kQHeads, kGroup = S::kGroup, kHeadDim = S::kHeadDim;
  constexpr int kOutputsPerThread = kGroup * kHeadDim / kSplitThreads;
  static_assert(kOutputsPerThread * kSplitThreads == kGroup * kHeadDim && kOutputsPerThread <= 8, "partial layout");
  __shared__ int pages[S::kSplitPages];
  const int split = blockIdx.x, head = blockIdx.y, t = threadIdx.x;
  const int request = S::kBatch == 1 ? 0 : int(blockIdx.z);
  const uint4 acc = read_split<S, kSplitThreads, S::kSplitTokens>(k_pool, v_pool, page_table + request * S::kPages,
                                                                  pages, split, head);
  if ((acc.x & acc.y & acc.z & acc.w) == 0xFFFFFFFFu) sink[0] = acc.x ^ acc.w;
  if (xors) xors[((std::size_t(request) * S::kKvHeads + head) * kSplits + split) * kSplitThreads + t] = acc;

  // The partials: [request][split][q head][d] and [request][split][q head], as the plugin's.
  const std::size_t request_split = std::size_t(request) * kSplits + split;
  float* mine = partials + (request_split * kQHeads + head * kGroup) * kHeadDim;
#pragma unroll
  for (int k = 0; k < kOutputsPerThread; ++k) mine[t + k * kSplitThreads] = partial_value(acc, k);
  if (t < kGroup) lse[request_split * kQHeads + head * kGroup + t] = float(acc.y & 0xFFu) * 0x1p-6f;
  if constexpr (kMerge == Merge::kGridSync) grid_sync_merge<S>(partials, lse, out, split, head);
  if constexpr (kMerge == Merge::kLastCta) last_cta_merge<S>(partials, lse, tickets, out, head);
}

// A CTA per (split, group of kHeads adjacent kv heads, request): read_split of the group's
// rows, each token's kHeads·D bytes contiguous (token-major pages); writes its q heads'
// partials (no merge).
template <class S, int kHeads, Layout kLayout = Layout::kTokenMajor, bool kStamped = false>
__global__ void __launch_bounds__(kSplitThreads, 4)
    split_read_heads(const uint4* __restrict__ k_pool, const uint4* __restrict__ v_pool,
                     const int* __restrict__ page_table, float* __restrict__ partials, unsigned* __restrict__ sink,
                     uint4* __restrict__ xors, unsigned long long* __restrict__ stamps) {
  static_assert(S::kKvHeads % kHeads == 0, "whole groups of kv heads");
  const unsigned long long start = kStamped ? global_ns() : 0;
  __shared__ int pages[S::kSplitPages];
  const int split = blockIdx.x, group = blockIdx.y, t = threadIdx.x;
  const int request = S::kBatch == 1 ? 0 : int(blockIdx.z);
  const uint4 acc = read_split<S, kSplitThreads, S::kSplitTokens, kHeads, kLayout>(
      k_pool, v_pool, page_table + request * S::kPages, pages, split, group * kHeads);
  if ((acc.x & acc.y & acc.z & acc.w) == 0xFFFFFFFFu) sink[0] = acc.x ^ acc.w;
  if (xors)
    xors[((std::size_t(request) * (S::kKvHeads / kHeads) + group) * S::kSplits + split) * kSplitThreads + t] = acc;
  constexpr int kOutputs = kHeads * S::kGroup * S::kHeadDim;  // this CTA's q heads' partials
  float* mine =
      partials + ((std::size_t(request) * S::kSplits + split) * S::kQHeads + group * kHeads * S::kGroup) * S::kHeadDim;
  for (int o = t, k = 0; o < kOutputs; o += kSplitThreads, ++k) mine[o] = partial_value(acc, k % 8);
  if constexpr (kStamped) stamp_cta_end(stamps, start);
}

// A persistent grid (kBalancedCtasPerSm CTAs per SM, one wave) over the step's rows: a
// stream is (request, group of kHeads adjacent kv heads), a row one token's kHeads·D bytes of
// it, and the rows, in (stream, token) order, are dealt out in equal shares to within one row;
// each CTA reads its consecutive rows (K, then V) through the page table in split_read's rounds.
// The balance a stream-K kernel would have, where split_read gives each CTA a whole split and
// leaves SMs with one CTA fewer than others; no merge (a stream-K kernel would merge the
// partials of the streams that a share boundary cuts).
constexpr int kBalancedCtasPerSm = 4, kBalancedMaxPages = 1024;  // the shared page bases: 8 KB

template <class S, int kHeads, bool kStamped = false>
__global__ void __launch_bounds__(kSplitThreads, kBalancedCtasPerSm)
    balanced_read(const uint4* __restrict__ k_pool, const uint4* __restrict__ v_pool,
                  const int* __restrict__ page_table, float* __restrict__ partials, unsigned* __restrict__ sink,
                  uint4* __restrict__ xors, unsigned long long* __restrict__ stamps) {
  const unsigned long long start = kStamped ? global_ns() : 0;
  constexpr int kGroups = S::kKvHeads / kHeads, kPageSize = S::kPageSize;
  constexpr int kRowChunks = kHeads * S::kRowChunks, kTokenChunks = S::kKvHeads * S::kRowChunks;
  constexpr long long kRows = static_cast<long long>(S::kBatch) * kGroups * S::kContext;
  constexpr int kRoundChunks = kSplitThreads * kRoundLoads;
  static_assert(S::kKvHeads % kHeads == 0, "whole groups of kv heads");
  __shared__ std::size_t base[kBalancedMaxPages];  // the first chunk of each (stream, page) of the share
  const int cta = blockIdx.x, t = threadIdx.x;
  const long long first = kRows * cta / gridDim.x, end = kRows * (cta + 1) / gridDim.x;
  const long long first_page = first / kPageSize;  // in (stream, page) order
  const int pages = int((end - 1) / kPageSize - first_page + 1), chunks = int(end - first) * kRowChunks;
  for (int i = t; i < pages; i += kSplitThreads) {
    const long long unit = first_page + i, stream = unit / S::kPages;
    const int page = int(unit % S::kPages), group = int(stream % kGroups), request = int(stream / kGroups);
    const std::size_t slot = page_table[request * S::kPages + page];
    base[i] = (slot * kPageSize * S::kKvHeads + group * kHeads) * S::kRowChunks;
  }
  __syncthreads();
  const int skipped = int(first - first_page * kPageSize);  // rows of the first page before the share
  uint4 acc = make_uint4(0, 0, 0, 0);
#pragma unroll 1
  for (int pool_index = 0; pool_index < 2; ++pool_index) {
    const uint4* pool = pool_index == 0 ? k_pool : v_pool;
#pragma unroll 1
    for (int j0 = 0; j0 < chunks; j0 += kRoundChunks) {
      uint4 v[kRoundLoads];
#pragma unroll
      for (int k = 0; k < kRoundLoads; ++k) {
        const int j = j0 + k * kSplitThreads + t, row = skipped + j / kRowChunks;
        v[k] = j < chunks ? __ldcs(pool + base[row / kPageSize] + row % kPageSize * kTokenChunks + j % kRowChunks)
                          : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int k = 0; k < kRoundLoads; ++k) xor_into(acc, v[k]);
    }
  }
  if ((acc.x & acc.y & acc.z & acc.w) == 0xFFFFFFFFu) sink[0] = acc.x ^ acc.w;
  if (xors) xors[std::size_t(cta) * kSplitThreads + t] = acc;
  constexpr int kOutputs = S::kGroup * S::kHeadDim;  // one kv head's partials, as split_read writes
  float* mine = partials + std::size_t(cta) * kOutputs;
  for (int o = t, k = 0; o < kOutputs; o += kSplitThreads, ++k) mine[o] = partial_value(acc, k % 8);
  if constexpr (kStamped) stamp_cta_end(stamps, start);
}

// Not an attention kernel's order: the stream kernel's own (one wave of 4 CTAs of 512 threads
// per SM, 4 loads per thread in flight, the grid reading a window of consecutive chunks each
// step), but through the page table: each step the grid reads the next 1056 (132 SMs) logical
// pages of 16 tokens and every kv head, K pool then V pool, each a whole scattered 16 KB page at
// D = 128. No attention kernel reads so (a stream's tokens stay in one CTA); page_oneshot_read
// reads the same pages in one-pass pieces instead of a persistent grid.
constexpr int kWindowLoads = 4;

template <class S, bool kStamped = false>
__global__ void __launch_bounds__(kStreamThreads)
    page_window_read(const uint4* __restrict__ k_pool, const uint4* __restrict__ v_pool,
                     const int* __restrict__ page_table, unsigned* __restrict__ sink, uint4* __restrict__ xors,
                     unsigned long long* __restrict__ stamps) {
  const unsigned long long start = kStamped ? global_ns() : 0;
  constexpr int kPageChunks = S::kPageSize * S::kKvHeads * S::kRowChunks;
  constexpr long long kPoolPages =
      static_cast<long long>(S::kBatch) * S::kPages;           // [request][page] = the table's order
  constexpr long long kChunks = 2 * kPoolPages * kPageChunks;  // K pages, then V pages
  const long long threads = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const auto chunk = [&](long long i) {  // logical chunk i: its pool's page through the table
    const long long page = i / kPageChunks, in_pool = page % kPoolPages;
    const uint4* pool = page < kPoolPages ? k_pool : v_pool;
    return pool + std::size_t(__ldg(page_table + in_pool)) * kPageChunks + i % kPageChunks;
  };
  uint4 acc = make_uint4(0, 0, 0, 0);
  long long i = t;
#pragma unroll 1
  for (; i + (kWindowLoads - 1) * threads < kChunks; i += kWindowLoads * threads) {
    uint4 v[kWindowLoads];
#pragma unroll
    for (int k = 0; k < kWindowLoads; ++k) v[k] = __ldcs(chunk(i + k * threads));
#pragma unroll
    for (int k = 0; k < kWindowLoads; ++k) xor_into(acc, v[k]);
  }
  for (; i < kChunks; i += threads) xor_into(acc, __ldcs(chunk(i)));
  if ((acc.x & acc.y & acc.z & acc.w) == 0xFFFFFFFFu) sink[0] = acc.x ^ acc.w;
  if (xors) xors[t] = acc;
  if constexpr (kStamped) stamp_cta_end(stamps, start);
}

// Clusters (the default shape only): a kv head's kSplitsPerHead splits (CTAs of kThreads) form clusters of
// kCluster CTAs, which merge their splits through distributed shared memory; with more
// than one cluster per head, the last of a (head, rank)'s clusters to finish (an atomic
// ticket) merges their results through global memory. One cluster per head would need no
// global step and no second kernel, but the GPU must then hold every head's cluster at
// once (max_active_clusters). check_partials/check_lse (the check only): the split
// partials also go to global memory.
template <int kCluster, int kThreads, int kSplitsPerHead>
__global__ void __launch_bounds__(kThreads, 1024 / kThreads)
    cluster_read_merge(const uint4* __restrict__ k_pool, const uint4* __restrict__ v_pool,
                       const int* __restrict__ page_table, float* __restrict__ out, float* __restrict__ cluster_out,
                       float* __restrict__ cluster_lse, unsigned* __restrict__ tickets, unsigned* __restrict__ sink,
                       uint4* __restrict__ xors, float* __restrict__ check_partials, float* __restrict__ check_lse) {
  namespace cg = cooperative_groups;
  using S = B1Shape;
  constexpr int kContext = S::kContext, kQHeads = S::kQHeads, kKvHeads = S::kKvHeads, kGroup = S::kGroup;
  constexpr int kHeadDim = S::kHeadDim, kPageSize = S::kPageSize;
  constexpr int kTokens = kContext / kSplitsPerHead, kClustersPerHead = kSplitsPerHead / kCluster;
  constexpr int kOutputs = kGroup * kHeadDim / kCluster;  // outputs each CTA merges (within one q head)
  static_assert(kOutputs * kCluster <= kThreads && kHeadDim % kOutputs == 0 && kCluster <= 32, "merge layout");
  static_assert(kClustersPerHead <= kMaxClustersPerHead && kKvHeads * kCluster <= kTickets, "buffer sizes");
  __shared__ int pages[kTokens / kPageSize];
  __shared__ float partial[kGroup * kHeadDim];  // [g][d]
  __shared__ float partial_lse[kGroup];
  __shared__ bool last;
  const cg::cluster_group cluster = cg::this_cluster();
  const int split = blockIdx.x, head = blockIdx.y, t = threadIdx.x;
  const int rank = int(cluster.block_rank()), which = split / kCluster;  // which: the head's cluster
  const uint4 acc = read_split<S, kThreads, kTokens>(k_pool, v_pool, page_table, pages, split, head);
  if ((acc.x & acc.y & acc.z & acc.w) == 0xFFFFFFFFu) sink[0] = acc.x ^ acc.w;
  if (xors) xors[(std::size_t(head) * kSplitsPerHead + split) * kThreads + t] = acc;
  for (int i = t; i < kGroup * kHeadDim; i += kThreads)
    partial[i] = float((i < kThreads ? acc.x : acc.z) & 0xFFu) * 0x1p-8f;
  if (t < kGroup) partial_lse[t] = float(acc.y & 0xFFu) * 0x1p-6f;
  __syncthreads();
  if (check_partials)
    for (int i = t; i < kGroup * kHeadDim; i += kThreads)
      check_partials[(std::size_t(split) * kQHeads + head * kGroup) * kHeadDim + i] = partial[i];
  if (check_lse && t < kGroup) check_lse[split * kQHeads + head * kGroup + t] = partial_lse[t];
  cluster.sync();
  // This CTA merges outputs [rank·kOutputs, +kOutputs) of the head's 512 (one q head g):
  // kCluster lanes per output, lane s reading the cluster's CTA s.
  float o = 0, lse_merged = 0;
  const int out_index = rank * kOutputs + t / kCluster, s = t % kCluster, g = out_index / kHeadDim;
  const bool merging = t < kOutputs * kCluster;  // whole warps
  if (merging) {
    const float l = cluster.map_shared_rank(partial_lse, s)[g];
    const float v = cluster.map_shared_rank(partial, s)[out_index];
    float m = l;
#pragma unroll
    for (int lanes = kCluster / 2; lanes > 0; lanes /= 2) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, lanes));
    const float w = __expf(l - m);
    float num = w * v, den = w;
#pragma unroll
    for (int lanes = kCluster / 2; lanes > 0; lanes /= 2) {
      num += __shfl_xor_sync(0xFFFFFFFFu, num, lanes);
      den += __shfl_xor_sync(0xFFFFFFFFu, den, lanes);
    }
    o = num / den;
    lse_merged = m + __logf(den);
  }
  cluster.sync();  // no CTA leaves while another still reads its shared memory
  const bool leader = merging && s == 0;
  if constexpr (kClustersPerHead == 1) {
    if (leader) out[head * kGroup * kHeadDim + out_index] = o;
    return;
  }
  // Several clusters per head: publish, take the (head, rank) ticket; the last merges them all.
  if (leader) {
    cluster_out[(std::size_t(which) * kKvHeads + head) * kGroup * kHeadDim + out_index] = o;
    if (out_index % kOutputs == 0) cluster_lse[(which * kKvHeads + head) * kGroup + g] = lse_merged;
  }
  __threadfence();
  __syncthreads();
  if (t == 0) last = atomicAdd(tickets + head * kCluster + rank, 1u) == kClustersPerHead - 1;
  __syncthreads();
  if (!last || !leader) return;
  __threadfence();
  float c_o[kClustersPerHead], c_l[kClustersPerHead];
#pragma unroll
  for (int c = 0; c < kClustersPerHead; ++c) {
    c_o[c] = c == which ? o : __ldcg(cluster_out + (std::size_t(c) * kKvHeads + head) * kGroup * kHeadDim + out_index);
    c_l[c] = c == which ? lse_merged : __ldcg(cluster_lse + (c * kKvHeads + head) * kGroup + g);
  }
  out[head * kGroup * kHeadDim + out_index] = lse_merge(c_l, c_o);
  if (out_index % kOutputs == 0) tickets[head * kCluster + rank] = 0;  // ready for the next launch
}

// The separate merge: a CTA per (q head, request), kMergeParts threads per d, each
// requesting all its splits' loads before the first use; with several parts, part p takes
// splits p, p + kMergeParts, ... and the parts merge through shared memory.
template <class S>
__global__ void __launch_bounds__(S::kMergeThreads)
    merge_splits(const float* __restrict__ partials, const float* __restrict__ lse, float* __restrict__ out) {
  constexpr int kSplits = S::kSplits, kQHeads = S::kQHeads, kHeadDim = S::kHeadDim, kParts = S::kMergeParts;
  constexpr int kPartSplits = kSplits / kParts;
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const int h = blockIdx.x, request = blockIdx.y, d = threadIdx.x % kHeadDim, part = threadIdx.x / kHeadDim;
  const std::size_t first_split = std::size_t(request) * kSplits;
  float l[kPartSplits], o[kPartSplits];
#pragma unroll
  for (int i = 0; i < kPartSplits; ++i) {
    const std::size_t s = first_split + part + i * kParts;
    l[i] = lse[s * kQHeads + h];
    o[i] = partials[(s * kQHeads + h) * kHeadDim + d];
  }
  float* const dst = out + (std::size_t(request) * kQHeads + h) * kHeadDim + d;
  if constexpr (kParts == 1) {
    *dst = lse_merge(l, o);
  } else {
    __shared__ LseSum sums[kParts][kHeadDim];
    sums[part][d] = lse_sum(l, o);
    __syncthreads();
    if (part != 0) return;
    float m = -INFINITY, num = 0, den = 0;
#pragma unroll
    for (int p = 0; p < kParts; ++p) m = fmaxf(m, sums[p][d].m);
#pragma unroll
    for (int p = 0; p < kParts; ++p) {
      const float w = __expf(sums[p][d].m - m);
      num += w * sums[p][d].num;
      den += w * sums[p][d].den;
    }
    *dst = num / den;
  }
}

// Which SMs share a GPC: the CTAs of a thread-block cluster run on one GPC, so every cluster's
// SMs are joined; over enough clusters the joined sets are the GPCs.
constexpr int kGpcCluster = 8;

__global__ void __cluster_dims__(kGpcCluster, 1, 1) cluster_sm_ids(unsigned* __restrict__ sm_of_cta) {
  unsigned sm;
  asm volatile("mov.u32 %0, %smid;" : "=r"(sm));
  if (threadIdx.x == 0) sm_of_cta[blockIdx.x] = sm;
}

// The GPC group of each SM (groups numbered by their smallest SM id), from cluster launches.
std::vector<int> gpc_of_sm(int sm_count, cudaStream_t stream) {
  const int ctas = sm_count * 16 / kGpcCluster * kGpcCluster;
  tilepath::cuda::DeviceBuffer ids(std::size_t(ctas) * sizeof(unsigned));
  std::vector<int> parent(sm_count);
  std::iota(parent.begin(), parent.end(), 0);
  const std::function<int(int)> root = [&](int a) { return parent[a] == a ? a : parent[a] = root(parent[a]); };
  std::vector<unsigned> host(ctas);
  for (int launch = 0; launch < 20; ++launch) {
    cluster_sm_ids<<<ctas, 32, 0, stream>>>(ids.as<unsigned>());
    TP_CUDA_CHECK(cudaGetLastError());
    TP_CUDA_CHECK(
        cudaMemcpyAsync(host.data(), ids.get(), host.size() * sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
    TP_CUDA_CHECK(cudaStreamSynchronize(stream));
    for (int c = 0; c < ctas; c += kGpcCluster)
      for (int i = 1; i < kGpcCluster; ++i) {
        const int a = root(int(host[c])), b = root(int(host[c + i]));
        if (a != b) parent[std::max(a, b)] = std::min(a, b);
      }
  }
  std::vector<int> group(sm_count);
  for (int sm = 0; sm < sm_count; ++sm) group[sm] = root(sm);
  return group;
}

struct DeviceData {
  const uint4 *contiguous, *k_pool, *v_pool;
  const int* page_table;
  float *partials, *lse, *out, *cluster_out, *cluster_lse;
  unsigned *tickets, *sink;
  std::size_t contiguous_bytes;
  int sm_count;
  cudaStream_t stream;
};

void launch_oneshot_stream(const DeviceData& d, uint4* xors) {
  constexpr int kLoads = 8;
  const std::size_t chunks = d.contiguous_bytes / 16;
  const int blocks = int((chunks + kLoads * kStreamThreads - 1) / (kLoads * kStreamThreads));
  oneshot_stream<kLoads><<<blocks, kStreamThreads, 0, d.stream>>>(d.contiguous, chunks, d.sink, xors);
  TP_CUDA_CHECK(cudaGetLastError());
}

template <class S, Merge kMerge>
void launch_split_read(const DeviceData& d, uint4* xors) {
  const dim3 grid(S::kSplits, S::kKvHeads, S::kBatch);
  if constexpr (kMerge == Merge::kGridSync) {  // cooperative: fails rather than deadlock if the grid does not fit
    const uint4 *k = d.k_pool, *v = d.v_pool;
    const int* table = d.page_table;
    float *partials = d.partials, *lse = d.lse, *out = d.out;
    unsigned *tickets = d.tickets, *sink = d.sink;
    void* args[] = {&k, &v, &table, &partials, &lse, &tickets, &out, &sink, &xors};
    TP_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(split_read<S, kMerge>), grid,
                                              dim3(kSplitThreads), args, 0, d.stream));
    return;
  }
  split_read<S, kMerge><<<grid, kSplitThreads, 0, d.stream>>>(d.k_pool, d.v_pool, d.page_table, d.partials, d.lse,
                                                              d.tickets, d.out, d.sink, xors);
  TP_CUDA_CHECK(cudaGetLastError());
  if constexpr (kMerge == Merge::kSeparateKernel) {
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(S::kQHeads, S::kBatch);
    config.blockDim = dim3(S::kMergeThreads);
    config.stream = d.stream;
    config.attrs = &attr;
    config.numAttrs = 1;
    TP_CUDA_CHECK(cudaLaunchKernelEx(&config, merge_splits<S>, static_cast<const float*>(d.partials),
                                     static_cast<const float*>(d.lse), d.out));
  }
}

// split_read with the CTAs of kCluster adjacent kv heads of a (split, request) launched as one
// thread-block cluster: they start together on one GPC and read the same pages at about the same
// time, so the pages' address translations are shared while they are in use.
template <class S, int kCluster>
void launch_split_read_clustered(const DeviceData& d, uint4* xors) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = 1;
  attr.val.clusterDim.y = kCluster;
  attr.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(S::kSplits, S::kKvHeads, S::kBatch);
  config.blockDim = dim3(kSplitThreads);
  config.stream = d.stream;
  config.attrs = &attr;
  config.numAttrs = 1;
  TP_CUDA_CHECK(cudaLaunchKernelEx(&config, split_read<S, Merge::kNone>, static_cast<const uint4*>(d.k_pool),
                                   static_cast<const uint4*>(d.v_pool), static_cast<const int*>(d.page_table),
                                   d.partials, d.lse, d.tickets, d.out, d.sink, xors));
}

template <class S, int kHeads, Layout kLayout = Layout::kTokenMajor>
void launch_split_read_heads(const DeviceData& d, uint4* xors, unsigned long long* stamps = nullptr) {
  const dim3 grid(S::kSplits, S::kKvHeads / kHeads, S::kBatch);
  const auto kernel = stamps ? split_read_heads<S, kHeads, kLayout, true> : split_read_heads<S, kHeads, kLayout>;
  kernel<<<grid, kSplitThreads, 0, d.stream>>>(d.k_pool, d.v_pool, d.page_table, d.partials, d.sink, xors, stamps);
  TP_CUDA_CHECK(cudaGetLastError());
}

// stream_oneshot_N's order through the page table: CTA b reads logical chunks
// [b·kLoads·512, +kLoads·512) of the K pool then the V pool, each thread its kLoads loads at
// once. The logical order is (request, page, token, kv head) by default, so a CTA reads whole
// scattered pages (four at D = 128 with 8 loads); kOneHead: (request, kv head, token), so a CTA
// reads one kv head's rows as an attention kernel's stream does: 128-byte rows 1 KB apart in
// token-major pages, 2 KB runs in head-major ones.
template <class S, int kLoads, bool kOneHead, Layout kLayout = Layout::kTokenMajor, bool kStamped = false>
__global__ void __launch_bounds__(kStreamThreads)
    page_oneshot_read(const uint4* __restrict__ k_pool, const uint4* __restrict__ v_pool,
                      const int* __restrict__ page_table, unsigned* __restrict__ sink, uint4* __restrict__ xors,
                      unsigned long long* __restrict__ stamps) {
  const unsigned long long start = kStamped ? global_ns() : 0;
  constexpr int kRowChunks = S::kRowChunks, kPageChunks = S::kPageSize * S::kKvHeads * kRowChunks;
  constexpr long long kPoolChunks = static_cast<long long>(S::kPoolChunks);
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x * kLoads + threadIdx.x;
  const auto chunk = [&](long long i) {  // logical chunk i: its place in its pool
    const uint4* pool = i < kPoolChunks ? k_pool : v_pool;
    const long long c = i % kPoolChunks;
    if constexpr (kOneHead) {
      constexpr long long kStreamChunks = static_cast<long long>(S::kContext) * kRowChunks;
      const long long stream = c / kStreamChunks;
      const int token = int(c % kStreamChunks / kRowChunks), part = int(c % kRowChunks);
      const int request = int(stream / S::kKvHeads), head = int(stream % S::kKvHeads);
      const std::size_t slot = __ldg(page_table + request * S::kPages + token / S::kPageSize);
      return pool + row_chunk<S, kLayout>(slot, token % S::kPageSize, head, part);
    } else {
      return pool + std::size_t(__ldg(page_table + c / kPageChunks)) * kPageChunks + c % kPageChunks;
    }
  };
  uint4 v[kLoads];
#pragma unroll
  for (int k = 0; k < kLoads; ++k) {
    const long long i = t + k * kStreamThreads;
    v[k] = i < 2 * kPoolChunks ? __ldcs(chunk(i)) : make_uint4(0, 0, 0, 0);
  }
  uint4 acc = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int k = 0; k < kLoads; ++k) xor_into(acc, v[k]);
  if ((acc.x & acc.y & acc.z & acc.w) == 0xFFFFFFFFu) sink[0] = acc.x ^ acc.w;
  if (xors) xors[std::size_t(blockIdx.x) * kStreamThreads + threadIdx.x] = acc;
  if constexpr (kStamped) stamp_cta_end(stamps, start);
}

template <class S, int kLoads>
constexpr int page_oneshot_ctas() {
  return int((2 * S::kPoolChunks + kLoads * kStreamThreads - 1) / (kLoads * kStreamThreads));
}

// balanced_read's grid: kBalancedCtasPerSm per SM, or 0 where a share's pages would not fit
// its shared table or the SM would not hold them all (then the reader is left out).
template <class S, int kHeads>
int balanced_ctas(int sm_count) {
  const long long rows = static_cast<long long>(S::kBatch) * (S::kKvHeads / kHeads) * S::kContext;
  const int ctas = sm_count * kBalancedCtasPerSm;
  int per_sm = 0;
  TP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, balanced_read<S, kHeads>, kSplitThreads, 0));
  return per_sm >= kBalancedCtasPerSm && (rows + ctas - 1) / ctas / S::kPageSize + 2 <= kBalancedMaxPages ? ctas : 0;
}

template <class S, int kHeads>
void launch_balanced_read(const DeviceData& d, float* partials, uint4* xors, unsigned long long* stamps = nullptr) {
  const auto kernel = stamps ? balanced_read<S, kHeads, true> : balanced_read<S, kHeads>;
  kernel<<<d.sm_count * kBalancedCtasPerSm, kSplitThreads, 0, d.stream>>>(d.k_pool, d.v_pool, d.page_table, partials,
                                                                          d.sink, xors, stamps);
  TP_CUDA_CHECK(cudaGetLastError());
}

template <class S, int kLoads, bool kOneHead, Layout kLayout = Layout::kTokenMajor>
void launch_page_oneshot_read(const DeviceData& d, uint4* xors, unsigned long long* stamps = nullptr) {
  const auto kernel =
      stamps ? page_oneshot_read<S, kLoads, kOneHead, kLayout, true> : page_oneshot_read<S, kLoads, kOneHead, kLayout>;
  kernel<<<page_oneshot_ctas<S, kLoads>(), kStreamThreads, 0, d.stream>>>(d.k_pool, d.v_pool, d.page_table, d.sink,
                                                                          xors, stamps);
  TP_CUDA_CHECK(cudaGetLastError());
}

template <class S>
void launch_page_window_read(const DeviceData& d, uint4* xors, unsigned long long* stamps = nullptr) {
  const auto kernel = stamps ? page_window_read<S, true> : page_window_read<S>;
  kernel<<<d.sm_count * 4, kStreamThreads, 0, d.stream>>>(d.k_pool, d.v_pool, d.page_table, d.sink, xors, stamps);
  TP_CUDA_CHECK(cudaGetLastError());
}

template <int kCluster, int kThreads, int kSplitsPerHead>
struct ClusterReader {
  static constexpr int kThreadsPerCta = kThreads, kSplits = kSplitsPerHead;
  static constexpr int kClusters = B1Shape::kKvHeads * kSplitsPerHead / kCluster;  // in the grid
  // Unused dynamic shared memory that lets only 1024 / kThreads CTAs share an SM, so the
  // grid's CTAs spread over 128 SMs instead of packing onto fewer.
  static constexpr int kSpacerBytes = kThreads == 1024 ? 150 * 1024 : 100 * 1024;
  static constexpr auto kernel = cluster_read_merge<kCluster, kThreads, kSplitsPerHead>;
  static cudaLaunchConfig_t config(cudaLaunchAttribute& attr, cudaStream_t stream) {
    attr = cudaLaunchAttribute{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = kCluster;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cudaLaunchConfig_t c{};
    c.gridDim = dim3(kSplitsPerHead, B1Shape::kKvHeads);
    c.blockDim = dim3(kThreads);
    c.stream = stream;
    c.dynamicSmemBytes = kSpacerBytes;
    c.attrs = &attr;
    c.numAttrs = 1;
    return c;
  }
  static void launch(const DeviceData& d, uint4* xors) {
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t c = config(attr, d.stream);
    TP_CUDA_CHECK(cudaLaunchKernelEx(&c, kernel, d.k_pool, d.v_pool, d.page_table, d.out, d.cluster_out, d.cluster_lse,
                                     d.tickets, d.sink, xors, xors ? d.partials : nullptr, xors ? d.lse : nullptr));
  }
  // Every cluster of the grid resident at once? (Otherwise one waits for another: no bound.)
  static bool all_resident(int& clusters) {
    clusters = 0;
    TP_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSpacerBytes));
    if (kCluster > 8 &&
        cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t c = config(attr, nullptr);
    if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &c) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return clusters >= kClusters;
  }
  static std::string name() {
    return "cluster" + std::to_string(kCluster) + "_x" + std::to_string(kThreads) + "_splits" +
           std::to_string(kSplitsPerHead) + "_merge";
  }
};

// Random words (never time on zeros); returns the XOR of all 16-byte chunks. splitmix64,
// not mt19937: the largest shapes fill 2 GB, and the values only need to be non-trivial.
Xor fill_random(DeviceBuffer& buffer, std::size_t bytes, unsigned seed, cudaStream_t stream) {
  std::vector<std::uint32_t> host(bytes / 4);
  std::uint64_t state = seed;
  const auto next = [&state] {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  Xor x{};
  for (std::size_t i = 0; i + 1 < host.size(); i += 2) {
    const std::uint64_t v = next();
    x[i % 4] ^= host[i] = static_cast<std::uint32_t>(v);
    x[(i + 1) % 4] ^= host[i + 1] = static_cast<std::uint32_t>(v >> 32);
  }
  TP_CUDA_CHECK(cudaMemcpyAsync(buffer.get(), host.data(), bytes, cudaMemcpyHostToDevice, stream));
  TP_CUDA_CHECK(cudaStreamSynchronize(stream));
  return x;
}

template <class T>
std::vector<T> download(const T* device, std::size_t count, cudaStream_t stream) {
  std::vector<T> host(count);
  TP_CUDA_CHECK(cudaMemcpyAsync(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost, stream));
  TP_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

// A reader must read every chunk exactly once: the XOR of its threads' XORs equals the data's.
void check_coverage(const std::string& name, const std::function<void(uint4*)>& launch, std::size_t threads,
                    const Xor& expected, uint4* xors, cudaStream_t stream) {
  launch(xors);
  Xor got{};
  for (const uint4& v : download(xors, threads, stream)) got[0] ^= v.x, got[1] ^= v.y, got[2] ^= v.z, got[3] ^= v.w;
  if (got != expected) throw std::runtime_error(name + " does not read every chunk exactly once");
}

// A merge must equal the host's log-sum-exp merge of the partials the device wrote
// (`splits` per request: the reader's, at most S::kSplits). xors: passed to the launch (a
// cluster CTA writes its partials to global memory only then).
template <class S>
void check_merge(const std::string& name, const std::function<void(uint4*)>& launch, int splits, uint4* xors,
                 const DeviceData& d) {
  constexpr int kQHeads = S::kQHeads, kHeadDim = S::kHeadDim;
  TP_CUDA_CHECK(cudaMemsetAsync(d.out, 0xFF, S::kOutputs * sizeof(float), d.stream));  // NaN poison
  launch(xors);
  const auto partials = download(d.partials, S::kPartials, d.stream);
  const auto lse = download(d.lse, S::kLses, d.stream);
  const auto out = download(d.out, S::kOutputs, d.stream);
  double worst = 0;
  for (int r = 0; r < S::kBatch; ++r)
    for (int h = 0; h < kQHeads; ++h) {
      const auto lse_of = [&](int s) { return double(lse[(std::size_t(r) * splits + s) * kQHeads + h]); };
      double m = -INFINITY;
      for (int s = 0; s < splits; ++s) m = std::max(m, lse_of(s));
      for (int dd = 0; dd < kHeadDim; ++dd) {
        double num = 0, den = 0;
        for (int s = 0; s < splits; ++s) {
          const double w = std::exp(lse_of(s) - m);
          num += w * partials[((std::size_t(r) * splits + s) * kQHeads + h) * kHeadDim + dd];
          den += w;
        }
        const double got = out[(std::size_t(r) * kQHeads + h) * kHeadDim + dd];
        worst = std::isfinite(got) ? std::max(worst, std::abs(got - num / den) / std::max(1e-3, std::abs(num / den)))
                                   : INFINITY;
      }
    }
  if (!(worst < 1e-4))
    throw std::runtime_error(name + ": merged output differs from the host merge (" + std::to_string(worst) + ")");
}

// Checks, times and prints (one JSON object) every reader of shape S.
template <class S>
void run_shape(int repeats) {
  constexpr bool kDefault = std::is_same_v<S, B1Shape>;  // the readers that merge without a second kernel
  const int device = 0;
  TP_CUDA_CHECK(cudaSetDevice(device));
  DeviceData d{};
  TP_CUDA_CHECK(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking));
  TP_CUDA_CHECK(cudaDeviceGetAttribute(&d.sm_count, cudaDevAttrMultiProcessorCount, device));
  // What the plugin would run here, for each matrix instruction family (4 CTAs per SM: the
  // occupancy of the plugin's K8/V8 kernels at D = 128); the probe's splits are its own.
  namespace plan = tilepath::perf::cuda_plan;
  const long long streams = static_cast<long long>(S::kBatch) * S::kKvHeads;
  const int plugin_splits = plan::choose_splits(streams, S::kContext, d.sm_count, 4, plan::MmaFamily::mma_sync);
  const int plugin_split_tokens = plan::split_tokens_for(S::kContext, plugin_splits);
  const int wgmma_splits = plan::choose_splits(streams, S::kContext, d.sm_count, 4, plan::MmaFamily::wgmma);

  const std::size_t pool_bytes = S::kPoolChunks * 16;
  const std::size_t table_entries = std::size_t(S::kBatch) * S::kPages;
  DeviceBuffer contiguous(2 * pool_bytes), k_pool(pool_bytes), v_pool(pool_bytes), table(table_entries * sizeof(int));
  DeviceBuffer partials(S::kPartials * sizeof(float)), lse(S::kLses * sizeof(float));
  DeviceBuffer out(S::kOutputs * sizeof(float)), tickets(kTickets * sizeof(unsigned)), sink(sizeof(unsigned));
  DeviceBuffer cluster_out(kMaxClustersPerHead * B1Shape::kOutputs * sizeof(float));
  DeviceBuffer cluster_lse(kMaxClustersPerHead * B1Shape::kQHeads * sizeof(float));
  const Xor contiguous_xor = fill_random(contiguous, 2 * pool_bytes, 1, d.stream);
  Xor pools_xor = fill_random(k_pool, pool_bytes, 2, d.stream);
  const Xor v_xor = fill_random(v_pool, pool_bytes, 3, d.stream);
  for (int i = 0; i < 4; ++i) pools_xor[i] ^= v_xor[i];
  std::vector<int> pages(table_entries);  // [request][page]: every request's pages scattered over one pool
  std::iota(pages.begin(), pages.end(), 0);
  DeviceBuffer table_in_order(table_entries * sizeof(int));
  table_in_order.upload(pages, d.stream);
  std::shuffle(pages.begin(), pages.end(), std::mt19937(4));  // scattered pages, as the plugin's
  table.upload(pages, d.stream);
  TP_CUDA_CHECK(cudaMemsetAsync(tickets.get(), 0, kTickets * sizeof(unsigned), d.stream));
  d.contiguous = contiguous.as<uint4>();
  d.contiguous_bytes = 2 * pool_bytes;
  d.k_pool = k_pool.as<uint4>();
  d.v_pool = v_pool.as<uint4>();
  d.page_table = table.as<int>();
  d.partials = partials.as<float>();
  d.lse = lse.as<float>();
  d.out = out.as<float>();
  d.tickets = tickets.as<unsigned>();
  d.cluster_out = cluster_out.as<float>();
  d.cluster_lse = cluster_lse.as<float>();
  d.sink = sink.as<unsigned>();

  // The readers; launch(xors) enqueues one (xors: per-thread XORs for the checks, or null).
  struct Reader {
    std::string name;
    std::function<void(uint4*)> launch;
    std::size_t threads;  // threads of the reading kernel (0: the plugin's kernel, not checked here)
    Xor data_xor;
    int merged_splits;  // per request; 0: no merge
  };
  const std::size_t split_threads = std::size_t(S::kBatch) * S::kSplits * S::kKvHeads * kSplitThreads;
  const std::size_t stream_threads =
      (2 * S::kPoolChunks + 8 * kStreamThreads - 1) / (8 * kStreamThreads) * kStreamThreads;
  std::vector<Reader> readers = {
      {"stream_project",
       [&](uint4*) {
         TP_CUDA_CHECK(tilepath::cuda::launch_stream_read(d.contiguous, 2 * pool_bytes, d.sink, d.sm_count, d.stream));
       },
       0, contiguous_xor, 0},
      {"stream_oneshot_8", [&](uint4* x) { launch_oneshot_stream(d, x); }, stream_threads, contiguous_xor, 0},
      {"split_read", [&](uint4* x) { launch_split_read<S, Merge::kNone>(d, x); }, split_threads, pools_xor, 0},
  };
  if (S::kSplits > 1)  // an unsplit step has nothing to merge (the plugin launches no combine)
    readers.push_back({"split_read_merge", [&](uint4* x) { launch_split_read<S, Merge::kSeparateKernel>(d, x); },
                       split_threads, pools_xor, S::kSplits});
  DeviceData in_order = d;
  in_order.page_table = table_in_order.as<int>();
  readers.push_back({"split_read_in_order", [&](uint4* x) { launch_split_read<S, Merge::kNone>(in_order, x); },
                     split_threads, pools_xor, 0});
  const auto add_clustered = [&](auto cluster) {
    constexpr int kCluster = decltype(cluster)::value;
    if constexpr (S::kKvHeads % kCluster == 0 && kCluster > 1)
      readers.push_back({"split_read_cluster" + std::to_string(kCluster),
                         [&](uint4* x) { launch_split_read_clustered<S, kCluster>(d, x); }, split_threads, pools_xor,
                         0});
  };
  add_clustered(std::integral_constant<int, 2>{});
  add_clustered(std::integral_constant<int, 8>{});
  const auto add_heads = [&](auto heads) {
    constexpr int kHeads = decltype(heads)::value;
    if constexpr (S::kKvHeads % kHeads == 0 && kHeads > 1)
      readers.push_back({"split_read_heads" + std::to_string(kHeads),
                         [&](uint4* x) { launch_split_read_heads<S, kHeads>(d, x); }, split_threads / kHeads, pools_xor,
                         0});
  };
  add_heads(std::integral_constant<int, 2>{});
  add_heads(std::integral_constant<int, 4>{});
  add_heads(std::integral_constant<int, 8>{});
  DeviceBuffer balanced_partials(std::size_t(d.sm_count) * kBalancedCtasPerSm * S::kGroup * S::kHeadDim *
                                 sizeof(float));
  const auto add_balanced = [&](auto heads, const std::string& name, const DeviceData* data) {
    constexpr int kHeads = decltype(heads)::value;
    const int grid = balanced_ctas<S, kHeads>(d.sm_count);
    float* const out = balanced_partials.as<float>();
    if (grid)
      readers.push_back({name, [data, out](uint4* x) { launch_balanced_read<S, kHeads>(*data, out, x); },
                         std::size_t(grid) * kSplitThreads, pools_xor, 0});
  };
  add_balanced(std::integral_constant<int, 1>{}, "balanced_read", &d);
  add_balanced(std::integral_constant<int, 1>{}, "balanced_read_in_order", &in_order);
  add_balanced(std::integral_constant<int, S::kKvHeads>{}, "balanced_read_pages", &d);
  readers.push_back({"page_window_read", [&](uint4* x) { launch_page_window_read<S>(d, x); },
                     std::size_t(d.sm_count) * 4 * kStreamThreads, pools_xor, 0});
  readers.push_back({"page_oneshot_read", [&](uint4* x) { launch_page_oneshot_read<S, 8, false>(d, x); },
                     std::size_t(page_oneshot_ctas<S, 8>()) * kStreamThreads, pools_xor, 0});
  readers.push_back({"page_oneshot_read_4", [&](uint4* x) { launch_page_oneshot_read<S, 4, false>(d, x); },
                     std::size_t(page_oneshot_ctas<S, 4>()) * kStreamThreads, pools_xor, 0});
  readers.push_back({"page_oneshot_read_one_head", [&](uint4* x) { launch_page_oneshot_read<S, 8, true>(d, x); },
                     std::size_t(page_oneshot_ctas<S, 8>()) * kStreamThreads, pools_xor, 0});
  readers.push_back({"page_oneshot_read_one_head_hnd",
                     [&](uint4* x) { launch_page_oneshot_read<S, 8, true, Layout::kHeadMajor>(d, x); },
                     std::size_t(page_oneshot_ctas<S, 8>()) * kStreamThreads, pools_xor, 0});
  readers.push_back({"split_read_hnd", [&](uint4* x) { launch_split_read_heads<S, 1, Layout::kHeadMajor>(d, x); },
                     split_threads, pools_xor, 0});
  // Cluster designs: recorded with their co-residency; timed only when every cluster fits at once.
  struct ClusterRow {
    std::string name;
    int max_active, needed;
  };
  std::vector<ClusterRow> cluster_rows;
  if constexpr (kDefault) {
    readers.push_back({"split_read_last_merge", [&](uint4* x) { launch_split_read<S, Merge::kLastCta>(d, x); },
                       split_threads, pools_xor, S::kSplits});
    readers.push_back({"split_read_grid_sync_merge", [&](uint4* x) { launch_split_read<S, Merge::kGridSync>(d, x); },
                       split_threads, pools_xor, S::kSplits});
    const auto add_cluster = [&](auto reader) {
      using R = decltype(reader);
      int active = 0;
      const bool fits = R::all_resident(active);
      cluster_rows.push_back({R::name(), active, R::kClusters});
      if (fits)
        readers.push_back({R::name(), [&d](uint4* x) { R::launch(d, x); },
                           std::size_t(R::kSplits) * S::kKvHeads * R::kThreadsPerCta, pools_xor, R::kSplits});
    };
    add_cluster(ClusterReader<16, 1024, 16>{});  // one cluster per head: no global merge at all
    add_cluster(ClusterReader<8, 1024, 16>{});
    add_cluster(ClusterReader<8, 512, 32>{});
    add_cluster(ClusterReader<4, 512, 32>{});
  }
  std::size_t most_threads = 0;
  for (const Reader& r : readers) most_threads = std::max(most_threads, r.threads);
  DeviceBuffer xors(most_threads * sizeof(uint4));
  for (const Reader& r : readers) {
    if (r.threads) check_coverage(r.name, r.launch, r.threads, r.data_xor, xors.as<uint4>(), d.stream);
    for (int twice = 0; r.merged_splits && twice < 2; ++twice)  // twice: the tickets are reset
      check_merge<S>(r.name, r.launch, r.merged_splits, xors.as<uint4>(), d);
  }

  tilepath::cuda::L2Flusher flusher;
  flusher.prepare(device, d.stream);
  struct Row {
    std::string name;
    TimingStats t;
  };
  std::vector<Row> rows;
  for (const Reader& r : readers)
    rows.push_back({r.name, tilepath::cuda::time_launches([&] { r.launch(nullptr); }, [&] { flusher.flush(d.stream); },
                                                          d.stream, 10, repeats)});
  TP_CUDA_CHECK(cudaStreamSynchronize(d.stream));
  for (const Reader& r : readers)  // the tickets still consistent after the timed launches
    if (r.name == "split_read_last_merge")
      check_merge<S>(r.name + " after timing", r.launch, r.merged_splits, xors.as<uint4>(), d);

  // One stamped launch (HBM-cold) of the readers whose CTAs either own a stream or a short
  // piece: when does each SM's last CTA end, against the launch's last?
  struct Stamped {
    std::string name;
    std::function<void(unsigned long long*)> launch;
    std::size_t ctas;
  };
  const std::size_t split_ctas = std::size_t(S::kBatch) * S::kSplits * S::kKvHeads;
  const std::size_t oneshot_ctas = page_oneshot_ctas<S, 8>();
  const std::size_t persistent_ctas = std::size_t(d.sm_count) * kBalancedCtasPerSm;
  std::vector<Stamped> stamped = {
      {"split_read", [&](unsigned long long* st) { launch_split_read_heads<S, 1>(d, nullptr, st); }, split_ctas},
      {"split_read_hnd",
       [&](unsigned long long* st) { launch_split_read_heads<S, 1, Layout::kHeadMajor>(d, nullptr, st); }, split_ctas},
      {"page_oneshot_read", [&](unsigned long long* st) { launch_page_oneshot_read<S, 8, false>(d, nullptr, st); },
       oneshot_ctas},
      {"page_oneshot_read_one_head",
       [&](unsigned long long* st) { launch_page_oneshot_read<S, 8, true>(d, nullptr, st); }, oneshot_ctas},
      {"page_window_read", [&](unsigned long long* st) { launch_page_window_read<S>(d, nullptr, st); },
       std::size_t(d.sm_count) * 4},
  };
  if (balanced_ctas<S, S::kKvHeads>(d.sm_count))
    stamped.push_back({"balanced_read_pages",
                       [&](unsigned long long* st) {
                         launch_balanced_read<S, S::kKvHeads>(d, balanced_partials.as<float>(), nullptr, st);
                       },
                       persistent_ctas});
  std::string stamps_json;
  for (const Stamped& r : stamped) {
    DeviceBuffer stamps(3 * r.ctas * sizeof(unsigned long long));
    flusher.flush(d.stream);
    r.launch(stamps.as<unsigned long long>());
    TP_CUDA_CHECK(cudaGetLastError());
    const auto words = download(stamps.as<unsigned long long>(), 3 * r.ctas, d.stream);
    unsigned long long first = ~0ull, last = 0;
    for (std::size_t c = 0; c < r.ctas; ++c)
      first = std::min(first, words[3 * c + 1]), last = std::max(last, words[3 * c + 2]);
    std::vector<double> sm_last(d.sm_count, 0), ends;
    for (std::size_t c = 0; c < r.ctas; ++c) {
      const double end_us = double(words[3 * c + 2] - first) * 1e-3;
      ends.push_back(end_us);
      const auto sm = static_cast<std::size_t>(words[3 * c]);
      if (sm < sm_last.size()) sm_last[sm] = std::max(sm_last[sm], end_us);
    }
    const auto pct = [](std::vector<double> v, double q) {
      std::sort(v.begin(), v.end());
      return v[static_cast<std::size_t>(q * double(v.size() - 1) + 0.5)];
    };
    const double span = double(last - first) * 1e-3;
    const double busy = std::accumulate(sm_last.begin(), sm_last.end(), 0.0) / (double(sm_last.size()) * span);
    char line[512];
    std::snprintf(line, sizeof line,
                  "    {\"name\": \"%s\", \"ctas\": %zu, \"span_us\": %.2f, \"cta_end_us\": [%.2f, %.2f, %.2f, %.2f], "
                  "\"sm_last_end_us\": [%.2f, %.2f, %.2f, %.2f, %.2f], \"sm_idle_fraction\": %.4f, \"by_sm\": [",
                  r.name.c_str(), r.ctas, span, pct(ends, 0.5), pct(ends, 0.9), pct(ends, 0.99), pct(ends, 1.0),
                  pct(sm_last, 0), pct(sm_last, 0.1), pct(sm_last, 0.5), pct(sm_last, 0.9), pct(sm_last, 1.0),
                  1 - busy);
    std::string by_sm;  // each SM's last CTA end (us), by SM id
    for (const double end : sm_last) by_sm += (by_sm.empty() ? "" : ", ") + std::to_string(end).substr(0, 7);
    stamps_json += (stamps_json.empty() ? "" : ",\n") + std::string(line) + by_sm + "]}";
  }

  // The floor of the targets: these bytes at the plugin's read bandwidth (1 GiB stream).
  DeviceBuffer big;
  const auto bandwidth = tilepath::cuda::measure_read_bandwidth(device, d.stream, big, 3, 20);
  const double bytes = 2.0 * double(pool_bytes);
  const double floor_us = bytes / (bandwidth.gbps * 1e3);
  cudaDeviceProp prop{};
  TP_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::printf(
      "{\n  \"device\": \"%s\",\n  \"shape\": {\"batch\": %d, \"context\": %d, \"q_heads\": %d, \"kv_heads\": %d, "
      "\"head_dim\": %d, \"page_size\": %d, \"kv\": \"k8v8\", \"split_tokens\": %d, \"splits\": %d, "
      "\"plugin_splits\": %d, \"plugin_split_tokens\": %d, \"plugin_wgmma_splits\": %d},\n",
      prop.name, S::kBatch, S::kContext, S::kQHeads, S::kKvHeads, S::kHeadDim, S::kPageSize, S::kSplitTokens,
      S::kSplits, plugin_splits, plugin_split_tokens, wgmma_splits);
  std::string gpcs;  // each SM's GPC group (its smallest SM id), by SM id
  for (const int g : gpc_of_sm(d.sm_count, d.stream)) gpcs += (gpcs.empty() ? "" : ", ") + std::to_string(g);
  std::printf("  \"gpc_of_sm\": [%s],\n", gpcs.c_str());
  std::printf("  \"bytes\": %.0f,\n  \"read_bandwidth_gbps\": %.1f,\n  \"floor_us\": %.3f,\n", bytes, bandwidth.gbps,
              floor_us);
  // target_us: issue 5's 0.70 of the read bandwidth, for every shape alike.
  std::printf("  \"target_us\": %.3f,\n  \"cache\": \"hbm_cold\",\n  \"repeats\": %d,\n", floor_us / 0.7, repeats);
  std::printf("  \"cluster_designs\": [\n");
  for (std::size_t i = 0; i < cluster_rows.size(); ++i)
    std::printf("    {\"name\": \"%s\", \"max_active_clusters\": %d, \"clusters_needed\": %d}%s\n",
                cluster_rows[i].name.c_str(), cluster_rows[i].max_active, cluster_rows[i].needed,
                i + 1 < cluster_rows.size() ? "," : "");
  // stamps: cta_end_us p50, p90, p99, max and sm_last_end_us min, p10, p50, p90, max, after the
  // launch's first CTA start; sm_idle_fraction: the SMs' mean idle share of the span after
  // their last CTA ended.
  std::printf("  ],\n  \"stamps\": [\n%s\n  ],\n  \"rows\": [\n", stamps_json.c_str());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const TimingStats& t = rows[i].t;
    std::printf(
        "    {\"name\": \"%s\", \"median_us\": %.3f, \"min_us\": %.3f, \"max_us\": %.3f, "
        "\"fraction_of_read_bandwidth\": %.4f, \"x_floor\": %.4f}%s\n",
        rows[i].name.c_str(), t.median_us, t.min_us, t.max_us, floor_us / t.median_us, t.median_us / floor_us,
        i + 1 < rows.size() ? "," : "");
  }
  std::printf("  ]\n}\n");
}

// The compiled shapes, as --shape spells them (B,S,Hq,Hk,D,splits).
struct ShapeEntry {
  int batch, context, q_heads, kv_heads, head_dim, splits;
  void (*run)(int repeats);
};
template <class S>
constexpr ShapeEntry entry_of() {
  return {S::kBatch, S::kContext, S::kQHeads, S::kKvHeads, S::kHeadDim, S::kSplits, run_shape<S>};
}
constexpr ShapeEntry kShapes[] = {
    entry_of<B1Shape>(),  // the default
    entry_of<B1OneKvShape>(),
    entry_of<B32OneKvShape>(),
    entry_of<FloorShape<64, 4096, 1>>(),
    entry_of<FloorShape<64, 4096, 2>>(),  // for split_read_heads2, 4, 8 at split_read's 512 CTAs
    entry_of<FloorShape<64, 4096, 4>>(),
    entry_of<FloorShape<64, 4096, 8>>(),
    entry_of<FloorShape<64, 4096, 1, 64>>(),
    entry_of<FloorShape<64, 4096, 2, 64>>(),  // D = 64: split_read_heads2, 4, 8 at 512 CTAs
    entry_of<FloorShape<64, 4096, 4, 64>>(),
    entry_of<FloorShape<64, 4096, 8, 64>>(),
    entry_of<FloorShape<128, 2048, 1>>(),
    entry_of<FloorShape<128, 1024, 1>>(),
    entry_of<FloorShape<64, 2048, 1>>(),
    entry_of<FloorShape<16, 32768, 4>>(),
    entry_of<FloorShape<16, 32768, 2>>(),
    entry_of<FloorShape<16, 32768, 8>>(),  // for split_read_heads4, 8 at the wgmma split's 256 CTAs
    entry_of<FloorShape<16, 32768, 16>>(),
    entry_of<FloorShape<16, 16384, 4>>(),
    entry_of<FloorShape<16, 16384, 2>>(),
    entry_of<FloorShape<16, 8192, 4>>(),
    entry_of<FloorShape<16, 8192, 2>>(),
    entry_of<FloorShape<4, 65536, 16>>(),
    entry_of<FloorShape<4, 65536, 8>>(),
    entry_of<FloorShape<4, 32768, 16>>(),
    entry_of<FloorShape<4, 32768, 8>>(),
};

std::string spell(const ShapeEntry& e) {
  return std::to_string(e.batch) + "," + std::to_string(e.context) + "," + std::to_string(e.q_heads) + "," +
         std::to_string(e.kv_heads) + "," + std::to_string(e.head_dim) + "," + std::to_string(e.splits);
}

std::string shape_list() {
  std::string list;
  for (const ShapeEntry& e : kShapes) list += (list.empty() ? "" : "; ") + spell(e);
  return list;
}

}  // namespace

// The compiled shapes as one JSON array (--list), so that a caller can choose among a shape's
// split counts without parsing an error message.
void print_shape_list() {
  std::printf("[");
  bool first = true;
  for (const ShapeEntry& e : kShapes) {
    std::printf(
        "%s{\"batch\": %d, \"context\": %d, \"q_heads\": %d, \"kv_heads\": %d, \"head_dim\": %d, "
        "\"splits\": %d}",
        first ? "" : ", ", e.batch, e.context, e.q_heads, e.kv_heads, e.head_dim, e.splits);
    first = false;
  }
  std::printf("]\n");
}

int main(int argc, char** argv) try {
  const char* const usage = "usage: paged_read_bound [repeats] [--shape B,S,Hq,Hk[,D[,splits]]] | --list";
  int repeats = 50;
  const ShapeEntry* shape = &kShapes[0];
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--list") {
      print_shape_list();
      return 0;
    }
    if (arg == "--shape") {
      if (++i == argc) throw std::runtime_error(std::string("--shape needs B,S,Hq,Hk[,D[,splits]]; ") + usage);
      int b = 0, s = 0, hq = 0, hk = 0, dim = 128, splits = 0;
      char tail = 0;
      const int n = std::sscanf(argv[i], "%d,%d,%d,%d,%d,%d%c", &b, &s, &hq, &hk, &dim, &splits, &tail);
      if (n < 4 || n > 6)
        throw std::runtime_error(std::string("--shape ") + argv[i] +
                                 ": expected B,S,Hq,Hk[,D[,splits]] (four to six integers)");
      shape = nullptr;
      for (const ShapeEntry& e : kShapes)  // the first listed where splits is not given
        if (!shape && e.batch == b && e.context == s && e.q_heads == hq && e.kv_heads == hk && e.head_dim == dim &&
            (splits == 0 || e.splits == splits))
          shape = &e;
      if (!shape)
        throw std::runtime_error(std::string("--shape ") + argv[i] + " is not compiled in; the shapes: " +
                                 shape_list() + " (kShapes in bench/paged_read_bound.cu)");
    } else if (!arg.empty() && arg.find_first_not_of("0123456789") == std::string::npos) {
      repeats = std::max(5, std::atoi(arg.c_str()));
    } else {
      throw std::runtime_error("unknown argument " + arg + "; " + usage);
    }
  }
  shape->run(repeats);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "paged_read_bound: %s\n", e.what());
  return 1;
}
