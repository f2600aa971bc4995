// backends/cuda/decode_launch.h: variant lookup, the split combine kernel and the
// launch of a whole decode step.
#include "backends/cuda/decode_launch.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <cuda_bf16.h>

#include "backends/cuda/kernels/device_primitives.cuh"
#include "backends/cuda/kernels/variant_table.h"

namespace tilepath::cuda {

namespace {

using kernels::VariantEntry;

constexpr int kHeadsPerCta = 8;      // query heads one CTA holds (the PV n8 side)
constexpr int kCtasPerSmGuess = 4;   // resident CTAs per SM of the FP8 D=128 variants (for the split count)
constexpr int kMinTokensPerSplit = 256;
constexpr int kMaxSplits = 128;
constexpr int kTwoHeadMinTokensPerCta = 4096;  // kv_heads_per_cta_for

const std::vector<VariantEntry>& variants() {
  static const std::vector<VariantEntry> table = [] {
    std::vector<VariantEntry> t;
    kernels::append_k16v16_variants(t);
    kernels::append_k16v8_variants(t);
    kernels::append_k8v16_variants(t);
    kernels::append_k8v8_transform_variants(t);
    kernels::append_k8v8_fp8qk_variants(t);
    kernels::append_k8v8_two_head_variants(t);
    return t;
  }();
  return table;
}

bool same_ablation(const VariantEntry& e, const Ablation& a) {
  if (e.ablation != a.kind) return false;
  if (a.kind == AblationKind::remove || a.kind == AblationKind::twice) return e.ablated_stage == a.stage;
  return true;
}

const VariantEntry* find_variant(const DecodeArgs& args, const Ablation& ablation, int kv_heads_per_cta) {
  for (const VariantEntry& e : variants()) {
    if (e.kv_dtype == args.kv_dtype && e.k_path == args.k_path && e.mode == args.mode &&
        e.head_dim == args.head_dim && e.kv_heads_per_cta == kv_heads_per_cta && same_ablation(e, ablation)) {
      return &e;
    }
  }
  return nullptr;
}

// The variant a launch runs: kv_heads_per_cta_for's choice when it is compiled in.
const VariantEntry* find_variant(const DecodeArgs& args, const Ablation& ablation) {
  if (const int h = kv_heads_per_cta_for(args); h > 1) {
    if (const VariantEntry* e = find_variant(args, ablation, h)) return e;
  }
  return find_variant(args, ablation, 1);
}

const char* name_of(int v, std::initializer_list<const char*> names) {
  return v >= 0 && v < static_cast<int>(names.size()) ? names.begin()[v] : "unknown";
}

// "decode_k8v8_transform_full_d128" (+ "_remove_qk", "_twice_pv", "_load_only"); static storage.
const char* variant_name(const VariantEntry& e) {
  static std::map<const VariantEntry*, std::string> names;
  auto it = names.find(&e);
  if (it != names.end()) return it->second.c_str();
  std::string n = std::string("decode_") + name_of(e.kv_dtype, {"k16v16", "k8v16", "k16v8", "k8v8"}) + "_" +
                  name_of(e.k_path, {"transform", "fp8_qk", "k16"}) + "_" +
                  name_of(e.mode, {"none", "full", "k_only", "separate_kv"}) + "_d" + std::to_string(e.head_dim);
  static const char* const stages[] = {"k_load", "k_prep", "qk",    "softmax",  "v_load",
                                       "v_prep", "pv",     "accum", "q_quant", "combine"};
  if (e.kv_heads_per_cta > 1) n += "_kvh" + std::to_string(e.kv_heads_per_cta);
  if (e.ablation == AblationKind::remove || e.ablation == AblationKind::twice) {
    n += e.ablation == AblationKind::remove ? "_remove_" : "_twice_";
    n += (e.ablated_stage >= 0 && e.ablated_stage < TP_STAGE_COUNT) ? stages[e.ablated_stage] : "unknown";
  } else if (e.ablation == AblationKind::load_only) {
    n += "_load_only";
  }
  return names.emplace(&e, std::move(n)).first->second.c_str();
}

int head_chunks_of(const DecodeArgs& a) {
  const int group = a.q_heads / a.kv_heads;
  return (group + kHeadsPerCta - 1) / kHeadsPerCta;
}

std::size_t align256(std::size_t n) { return (n + 255) / 256 * 256; }

}  // namespace

// ============================================================================
// combine: O = Σ_s 2^(lse_s - max) · O_s / Σ_s 2^(lse_s - max)
// One block per (request, q head, 32-wide d slice). Each thread reads at most one
// split's lse and keeps its weight in a register and in shared memory; for the
// weighted sum the block's 8 warps take every 8th split of the slice, with a thread's
// partial loads issued in batches of 16 before the first is used: up to 128 splits, one
// L2 round trip for the lse and one per d slice for the partials. (v1 looped
// over the splits serially; the 256-thread version re-read the lse and kept 8 loads
// in flight: ~5 round trips at 66 splits.)
// ============================================================================

constexpr int kCombineSlice = 32;                         // d per block: one coalesced 128-byte row
constexpr int kCombineGroups = 8;                         // warps, each over every 8th split
constexpr int kCombineThreads = kCombineSlice * kCombineGroups;
constexpr int kMaxCombineSplits = 256;                    // OperatingPoint validates splits <= 256
constexpr int kSplitsPerThread = kMaxCombineSplits / kCombineGroups;
// 16 loads per batch: one batch up to 128 splits. More registers would keep combine
// blocks from sharing an SM with the main kernel's CTAs (4 x 64 threads x 190 regs
// leave 16 K registers: 64 per thread at 256), which PDL uses to start them early;
// a 128-register version measured +7 us at B=16, S=32768 (4 splits).
constexpr int kLoadsInFlight = 16;
static_assert(kCombineThreads >= kMaxCombineSplits, "one lse per thread");

#ifdef TILEPATH_KERNEL_TRACE
__device__ __forceinline__ unsigned long long trace_globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}
#endif

__device__ __forceinline__ float block_reduce(float v, bool take_max, float* scratch) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, off);
    v = take_max ? fmaxf(v, other) : v + other;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float r = scratch[0];
#pragma unroll
  for (int w = 1; w < kCombineThreads / 32; ++w) r = take_max ? fmaxf(r, scratch[w]) : r + scratch[w];
  __syncthreads();  // scratch is reused by the next reduction
  return r;
}

__global__ void __launch_bounds__(kCombineThreads, 4) combine_kernel(const float* partial_out, const float* partial_lse,
                                                                 int splits, int rows, int head_dim,
                                                                 std::uint16_t* out) {
  __shared__ float weight[kMaxCombineSplits];
  __shared__ float scratch[kCombineThreads / 32];
  __shared__ float group_sum[kCombineGroups][kCombineSlice];
#ifdef TILEPATH_KERNEL_TRACE
  const unsigned long long trace_start = trace_globaltimer();
#endif
  kernels::grid_dependency_wait();  // the partials of the main kernel
#ifdef TILEPATH_KERNEL_TRACE
  const unsigned long long trace_released = trace_globaltimer();
#endif
  const std::size_t row = blockIdx.x;
  const int own = threadIdx.x;  // the split whose lse this thread reads
  const float lse = own < splits ? partial_lse[static_cast<std::size_t>(own) * rows + row] : -INFINITY;
  const float lse_max = block_reduce(lse, true, scratch);
  // empty split (lse = -inf): weight 0; every split empty: all weights 0, output 0
  const float w = (lse_max == -INFINITY || own >= splits) ? 0.0f : exp2f(lse - lse_max);
  weight[own] = w;
  const float weight_sum = block_reduce(w, false, scratch);  // its barriers also publish weight[]
  const float inv_sum = weight_sum > 0.0f ? 1.0f / weight_sum : 0.0f;

  const int lane = threadIdx.x % kCombineSlice, group = threadIdx.x / kCombineSlice;
  const std::size_t split_stride = static_cast<std::size_t>(rows) * head_dim;
  // d slices: one per block when the grid has them (few rows), else the block loops.
  for (int d0 = blockIdx.y * kCombineSlice; d0 < head_dim; d0 += gridDim.y * kCombineSlice) {
    const int d = d0 + lane;
    const float* column = partial_out + row * head_dim + d;
    float value = 0.0f;
#pragma unroll 1
    for (int i0 = 0; i0 < kSplitsPerThread && group + i0 * kCombineGroups < splits; i0 += kLoadsInFlight) {
      float part[kLoadsInFlight];
#pragma unroll
      for (int i = 0; i < kLoadsInFlight; ++i) {  // the batch's loads in flight before the first use
        const int s = group + (i0 + i) * kCombineGroups;
        part[i] = s < splits ? column[s * split_stride] : 0.0f;
      }
#pragma unroll
      for (int i = 0; i < kLoadsInFlight; ++i) value += weight[group + (i0 + i) * kCombineGroups] * part[i];
    }
    group_sum[group][lane] = value;
    __syncthreads();
    if (group == 0) {
#pragma unroll
      for (int g = 1; g < kCombineGroups; ++g) value += group_sum[g][lane];
      out[row * head_dim + d] = __bfloat16_as_ushort(__float2bfloat16_rn(value * inv_sum));
    }
    __syncthreads();  // group_sum is reused by the next slice
  }
#ifdef TILEPATH_KERNEL_TRACE
  if (threadIdx.x == 0)  // bench/kernel_trace.py: the combine against the main kernel's CTAs
    printf("TC %d %d g0 %llu released %llu g9 %llu\n", blockIdx.x, blockIdx.y, trace_start, trace_released,
           trace_globaltimer());
#endif
}

// ============================================================================
// public interface
// ============================================================================

bool decode_variant_available(const DecodeArgs& args, const Ablation& ablation) {
  return find_variant(args, ablation) != nullptr;
}

std::size_t decode_workspace_bytes(const DecodeArgs& args) {
  const std::size_t rows = static_cast<std::size_t>(std::max(0, args.batch)) * std::max(0, args.q_heads);
  const std::size_t splits = static_cast<std::size_t>(std::max(1, args.splits));
  std::size_t bytes = 0;
  if (splits > 1) {
    bytes += align256(splits * rows * args.head_dim * sizeof(float));  // partial_out
    bytes += align256(splits * rows * sizeof(float));                  // partial_lse
  }
  return bytes;
}

cudaError_t launch_decode(const DecodeArgs& args, const Ablation& ablation, cudaStream_t stream, KernelInfo* info) {
  if (args.batch < 1 || args.q_heads < 1 || args.kv_heads < 1 || args.q_heads % args.kv_heads != 0 ||
      args.page_size < 1 || args.max_pages_per_seq < 1 || args.splits < 1 || args.head_dim < 1 ||
      args.split_tokens < 32 || args.split_tokens % 32 != 0 || !args.q ||
      !args.k_pages ||
      !args.v_pages || !args.page_table || !args.lengths || !args.out) {
    return cudaErrorInvalidValue;
  }
  if ((args.splits > 1 && (!args.partial_out || !args.partial_lse)) || args.splits > kMaxCombineSplits ||
      args.head_dim % kCombineSlice != 0 ||
      (args.kv_dtype != TP_KV_K16V16 && (!args.k_scale || !args.v_scale))) {
    return cudaErrorInvalidValue;
  }
  const VariantEntry* entry = find_variant(args, ablation);
  if (!entry) return cudaErrorNotSupported;
  const int rows = args.batch * args.q_heads;

  if (const cudaError_t e = entry->launch(args, head_chunks_of(args), stream, info); e != cudaSuccess) return e;
  if (info) info->name = variant_name(*entry);

  if (args.splits > 1) {  // combine: log-sum-exp merge of the split partials
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    // A block per d slice while that stays within ~2 blocks per SM slot (B=1, S=32768:
    // 32 rows x 4 slices); many rows (B=16: 512) get one block each, looping the slices.
    const int slices = args.head_dim / kCombineSlice;
    config.gridDim = dim3(rows, rows * slices <= 1024 ? slices : 1);
    config.blockDim = dim3(kCombineThreads);
    config.stream = stream;
    config.attrs = &attr;
    config.numAttrs = 1;
    if (const cudaError_t e = cudaLaunchKernelEx(&config, combine_kernel, static_cast<const float*>(args.partial_out),
                                                 static_cast<const float*>(args.partial_lse), args.splits, rows,
                                                 args.head_dim, args.out);
        e != cudaSuccess) {
      return e;
    }
  }
  return cudaSuccess;
}

int kv_heads_per_cta_for(const DecodeArgs& args) {
  // Measured (docs/perf-notes.md, session 3): K8/V8 at D=128 with two kv heads per CTA
  // is 2-5% faster from 4096 tokens per CTA up (B=16/S=32768 +3.3%, B=64/S=32768 +5%,
  // B=4/S=65536 +2.2%, B=64/S=4096 +0.3%) and slower below (B=16/S=8192 -1%, B=1/S=32768
  // -4%); K16/V16 was not faster (-1.3% at B=16/S=32768). separate_kv keeps one.
  const bool k8v8 = args.kv_dtype == TP_KV_K8V8 && args.mode != TP_MODE_SEPARATE_KV && args.head_dim == 128;
  return k8v8 && args.kv_heads % 2 == 0 && args.split_tokens >= kTwoHeadMinTokensPerCta ? 2 : 1;
}

int split_tokens_for(int max_len, int splits) {
  splits = std::max(1, splits);
  return std::max(32, ((std::max(1, max_len) + splits - 1) / splits + 31) / 32 * 32);
}

int choose_splits(int batch, int kv_heads, int max_len, int sm_count) {
  if (batch < 1 || kv_heads < 1 || max_len < 1 || sm_count < 1) return 1;
  const long long ctas = static_cast<long long>(batch) * kv_heads;
  const long long slots = static_cast<long long>(sm_count) * kCtasPerSmGuess;
  if (ctas >= slots) return 1;
  const int most = std::max(1, std::min(kMaxSplits, max_len / kMinTokensPerSplit));
  // time ~ waves(ctas·s) · (tokens per split + a fixed per-split cost of ~one warp tile round)
  int best = 1;
  double best_cost = 1e300;
  for (int s = 1; s <= most; ++s) {
    const double waves = std::ceil(static_cast<double>(ctas * s) / static_cast<double>(slots));
    const double cost = waves * (static_cast<double>(max_len) / s + 128.0);
    if (cost < best_cost * 0.999) {
      best_cost = cost;
      best = s;
    }
  }
  return best;
}

}  // namespace tilepath::cuda
