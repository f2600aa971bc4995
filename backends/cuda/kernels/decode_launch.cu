// backends/cuda/decode_launch.h: variant lookup, the split combine kernel and the
// launch of a whole decode step.
#include "backends/cuda/decode_launch.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <cuda_bf16.h>

#include "backends/cuda/kernels/device_primitives.cuh"
#include "backends/cuda/kernels/variant_table.h"

namespace tilepath::cuda {

namespace {

using kernels::VariantEntry;

constexpr int kHeadsPerCta = 8;     // query heads one CTA holds (the PV n8 side)
constexpr int kCtasPerSmGuess = 4;  // resident CTAs per SM of the FP8 D=128 variants (for the split count)
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
    if (e.kv_dtype == args.kv_dtype && e.k_path == args.k_path && e.mode == args.mode && e.head_dim == args.head_dim &&
        e.kv_heads_per_cta == kv_heads_per_cta && same_ablation(e, ablation)) {
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
  static const char* const stages[] = {"k_load", "k_prep", "qk",    "softmax", "v_load",
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
// combine: O = Σ_s 2^(lse_s - M) · O_s / Σ_s 2^(lse_s - M),  M = max_s lse_s
// A block covers 64 d (blockIdx.y) of 8 / warps_per_row rows; a row's splits are shared
// by its warps_per_row warps (split s goes to warp s % warps_per_row), a lane holds 2
// consecutive d (a float2 of each partial). Each warp requests all its splits' lse and
// partials before using any (one batch of kSplitsPerBatch: one L2 round trip up to 96
// splits per row), merges them with a running max, and the row's warps merge once through
// shared memory. (The previous form, a block per (row, 32-d slice), needed a round trip
// for the lse, four block barriers and then a round trip per d slice it looped over:
// 6.2 us at B=16, S=32768 (4 splits), 3.7 us at B=1, ncu-timed, bench/results/device-checks/.
// A float4-per-lane form with 8 splits per batch was 1% faster at B=4 and B=16 but 3%
// slower at B=1: two batches, and only 32 blocks.)
// ============================================================================

constexpr int kCombineWarps = 8;
constexpr int kCombineThreads = 32 * kCombineWarps;
constexpr int kCombineD = 2 * 32;       // d per block: a float2 per lane
constexpr int kMaxCombineSplits = 256;  // OperatingPoint validates splits <= 256
// 12 float2 + 12 lse in flight per lane keep the kernel within 64 registers, so that its
// blocks share SMs with the main kernel's CTAs (4 x 64 threads x ~190 registers leave
// 16 K): PDL makes them resident early. A 128-register combine measured +7 us at B=16.
constexpr int kSplitsPerBatch = 12;

// Warps per row: the fewest (1, 2, 4, 8) that take every split in one batch.
static int combine_warps_per_row(int splits) {
  int warps = 1;
  while (warps < kCombineWarps && warps * kSplitsPerBatch < splits) warps *= 2;
  return warps;
}

#ifdef TILEPATH_KERNEL_TRACE
__device__ __forceinline__ unsigned long long trace_globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}
#endif

// Running log-sum-exp state of one lane: max m, weight sum l, weighted sum o (2 d).
struct CombineState {
  float m = -INFINITY, l = 0.0f;
  float2 o = make_float2(0.0f, 0.0f);
  // Adds terms 2^(lse_i - m)·v_i (empty splits: lse = -inf, weight 0).
  template <int kN>
  __device__ void add(const float (&lse)[kN], const float2 (&v)[kN]) {
    float m_new = m;
#pragma unroll
    for (int i = 0; i < kN; ++i) m_new = fmaxf(m_new, lse[i]);
    if (m_new == -INFINITY) return;  // nothing seen yet
    rescale(m_new);
#pragma unroll
    for (int i = 0; i < kN; ++i) {
      const float w = exp2f(lse[i] - m_new);
      l += w;
      o.x += w * v[i].x, o.y += w * v[i].y;
    }
  }
  __device__ void rescale(float m_new) {
    const float a = exp2f(m - m_new);  // m = -inf: 0
    l *= a;
    o.x *= a, o.y *= a;
    m = m_new;
  }
};

__global__ void __launch_bounds__(kCombineThreads, 4)
    combine_kernel(const float* partial_out, const float* partial_lse, int splits, int rows, int head_dim,
                   int warps_per_row, std::uint16_t* out) {
  __shared__ float warp_m[kCombineWarps], warp_l[kCombineWarps];
  __shared__ float2 warp_o[kCombineWarps][32];
#ifdef TILEPATH_KERNEL_TRACE
  const unsigned long long trace_start = trace_globaltimer();
#endif
  kernels::grid_dependency_wait();  // the partials of the main kernel
#ifdef TILEPATH_KERNEL_TRACE
  const unsigned long long trace_released = trace_globaltimer();
#endif
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int part = warp % warps_per_row;  // this warp takes splits part, part + warps_per_row, ...
  const int first = warp - part;          // the row's first warp in the block
  const int row = blockIdx.x * (kCombineWarps / warps_per_row) + warp / warps_per_row;
  const bool live_row = row < rows;
  const std::size_t split_stride = static_cast<std::size_t>(rows) * head_dim;
  const int d = blockIdx.y * kCombineD + 2 * lane;
  const bool live = live_row && d < head_dim;
  CombineState st;
#pragma unroll 1
  for (int s0 = part; s0 < splits; s0 += kSplitsPerBatch * warps_per_row) {
    float lse[kSplitsPerBatch];
    float2 v[kSplitsPerBatch];
#pragma unroll
    for (int i = 0; i < kSplitsPerBatch; ++i) {  // the batch's loads in flight before the first use
      const int s = s0 + i * warps_per_row;
      const bool present = live && s < splits;
      lse[i] = present ? partial_lse[static_cast<std::size_t>(s) * rows + row] : -INFINITY;
      v[i] = present ? *reinterpret_cast<const float2*>(partial_out + s * split_stride +
                                                        static_cast<std::size_t>(row) * head_dim + d)
                     : make_float2(0.0f, 0.0f);
    }
    st.add(lse, v);
  }
  if (warps_per_row > 1) {  // the row's warps merge through shared memory (a block-uniform branch)
    if (lane == 0) warp_m[warp] = st.m, warp_l[warp] = st.l;
    warp_o[warp][lane] = st.o;
    __syncthreads();
    if (part == 0) {
      float m_row = -INFINITY;
      for (int w = first; w < first + warps_per_row; ++w) m_row = fmaxf(m_row, warp_m[w]);
      CombineState merged;
      if (m_row != -INFINITY) {
        merged.m = m_row;
        for (int w = first; w < first + warps_per_row; ++w) {
          const float a = exp2f(warp_m[w] - m_row);  // a warp that saw only empty splits: 0
          merged.l += a * warp_l[w];
          merged.o.x += a * warp_o[w][lane].x, merged.o.y += a * warp_o[w][lane].y;
        }
      }
      st = merged;
    }
  }
  if (part == 0 && live) {  // every split empty: all weights 0, output 0
    const float inv = st.l > 0.0f ? 1.0f / st.l : 0.0f;
    const std::uint32_t packed = static_cast<std::uint32_t>(__bfloat16_as_ushort(__float2bfloat16_rn(st.o.x * inv))) |
                                 static_cast<std::uint32_t>(__bfloat16_as_ushort(__float2bfloat16_rn(st.o.y * inv)))
                                     << 16;
    *reinterpret_cast<std::uint32_t*>(out + static_cast<std::size_t>(row) * head_dim + d) = packed;
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
      args.split_tokens < 32 || args.split_tokens % 32 != 0 || !args.q || !args.k_pages || !args.v_pages ||
      !args.page_table || !args.lengths || !args.out) {
    return cudaErrorInvalidValue;
  }
  // The kernels store two d at once: BF16 pairs (4 bytes) and float pairs (8 bytes).
  if (reinterpret_cast<std::uintptr_t>(args.out) % 4 != 0 ||
      reinterpret_cast<std::uintptr_t>(args.partial_out) % 8 != 0) {
    return cudaErrorInvalidValue;
  }
  if ((args.splits > 1 && (!args.partial_out || !args.partial_lse)) || args.splits > kMaxCombineSplits ||
      args.head_dim % 2 != 0 || (args.kv_dtype != TP_KV_K16V16 && (!args.k_scale || !args.v_scale))) {
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
    const int warps_per_row = combine_warps_per_row(args.splits);
    const int rows_per_block = kCombineWarps / warps_per_row;
    config.gridDim = dim3((rows + rows_per_block - 1) / rows_per_block, (args.head_dim + kCombineD - 1) / kCombineD);
    config.blockDim = dim3(kCombineThreads);
    config.stream = stream;
    config.attrs = &attr;
    config.numAttrs = 1;
    if (const cudaError_t e = cudaLaunchKernelEx(&config, combine_kernel, static_cast<const float*>(args.partial_out),
                                                 static_cast<const float*>(args.partial_lse), args.splits, rows,
                                                 args.head_dim, warps_per_row, args.out);
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
