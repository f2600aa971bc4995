// backends/cuda/decode_launch.h: variant lookup, the once-per-step kernels
// (q_quant, combine) and the launch of a whole decode step.
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

const std::vector<VariantEntry>& variants() {
  static const std::vector<VariantEntry> table = [] {
    std::vector<VariantEntry> t;
    kernels::append_k16v16_variants(t);
    kernels::append_k16v8_variants(t);
    kernels::append_k8v16_variants(t);
    kernels::append_k8v8_transform_variants(t);
    kernels::append_k8v8_fp8qk_variants(t);
    return t;
  }();
  return table;
}

bool same_ablation(const VariantEntry& e, const Ablation& a) {
  if (e.ablation != a.kind) return false;
  if (a.kind == AblationKind::remove || a.kind == AblationKind::twice) return e.ablated_stage == a.stage;
  return true;
}

const VariantEntry* find_variant(const DecodeArgs& args, const Ablation& ablation) {
  for (const VariantEntry& e : variants()) {
    if (e.kv_dtype == args.kv_dtype && e.k_path == args.k_path && e.mode == args.mode &&
        e.head_dim == args.head_dim && same_ablation(e, ablation)) {
      return &e;
    }
  }
  return nullptr;
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
// q_quant: q8 = e4m3(q / s), s = amax|q| / 448 per (request, q head)  (as reference_decode)
// ============================================================================

template <int kD>
__global__ void __launch_bounds__(32) q_quant_kernel(const std::uint16_t* q, std::uint8_t* q8, float* q8_scale) {
  constexpr int kPerLane = kD / 32;
  kernels::grid_dependents_launch();  // the main kernel (a programmatic dependent) may start its K/V prologue
  const std::size_t row = blockIdx.x;
  const int lane = threadIdx.x;
  float x[kPerLane];
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    x[i] = __bfloat162float(__ushort_as_bfloat16(q[row * kD + lane * kPerLane + i]));
    amax = fmaxf(amax, fabsf(x[i]));
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
  const float scale = amax > 0.0f ? amax / 448.0f : 1.0f;
#pragma unroll
  for (int i = 0; i < kPerLane; i += 2) {
    const std::uint32_t two = kernels::pack_e4m3x2(x[i] / scale, x[i + 1] / scale);
    q8[row * kD + lane * kPerLane + i] = static_cast<std::uint8_t>(two & 0xFF);
    q8[row * kD + lane * kPerLane + i + 1] = static_cast<std::uint8_t>(two >> 8);
  }
  if (lane == 0) q8_scale[row] = scale;
}

// ============================================================================
// combine: O = Σ_s 2^(lse_s - max) · O_s / Σ_s 2^(lse_s - max)
// One block per (request, q head). The split weights are computed once, in parallel,
// into shared memory; for the weighted sum the block's threads cover (split group, d),
// each keeping 8 independent partial loads in flight (a serial loop over splits costs
// one L2 round trip per split: ~13 us at 33 splits on the H200 in v1).
// ============================================================================

constexpr int kCombineThreads = 256;  // a multiple of every head dim (64, 128, 256)
constexpr int kMaxCombineSplits = 256;  // OperatingPoint validates splits <= 256

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

__global__ void __launch_bounds__(kCombineThreads) combine_kernel(const float* partial_out, const float* partial_lse,
                                                                 int splits, int rows, int head_dim,
                                                                 std::uint16_t* out) {
  __shared__ float weight[kMaxCombineSplits];
  __shared__ float scratch[kCombineThreads / 32];
  kernels::grid_dependency_wait();  // the partials of the main kernel
  const std::size_t row = blockIdx.x;
  float lse_max = -INFINITY;
  for (int s = threadIdx.x; s < splits; s += kCombineThreads) {
    lse_max = fmaxf(lse_max, partial_lse[static_cast<std::size_t>(s) * rows + row]);
  }
  lse_max = block_reduce(lse_max, true, scratch);
  float weight_sum = 0.0f;
  for (int s = threadIdx.x; s < splits; s += kCombineThreads) {
    // empty split (lse = -inf): weight 0; every split empty: all weights 0, output 0
    const float w = lse_max == -INFINITY ? 0.0f : exp2f(partial_lse[static_cast<std::size_t>(s) * rows + row] - lse_max);
    weight[s] = w;
    weight_sum += w;
  }
  weight_sum = block_reduce(weight_sum, false, scratch);  // its barrier also publishes weight[]
  const float inv_sum = weight_sum > 0.0f ? 1.0f / weight_sum : 0.0f;
  __shared__ float group_sum[kCombineThreads];
  const int groups = kCombineThreads / head_dim;  // split groups summed in parallel
  const int d = threadIdx.x % head_dim, group = threadIdx.x / head_dim;
  const float* column = partial_out + row * head_dim + d;
  const std::size_t split_stride = static_cast<std::size_t>(rows) * head_dim;
  float value = 0.0f;
#pragma unroll 8
  for (int s = group; s < splits; s += groups) value += weight[s] * column[s * split_stride];
  group_sum[threadIdx.x] = value;
  __syncthreads();
  if (group == 0) {
    for (int g = 1; g < groups; ++g) value += group_sum[g * head_dim + d];
    out[row * head_dim + d] = __bfloat16_as_ushort(__float2bfloat16_rn(value * inv_sum));
  }
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
  if (args.k_path == TP_KPATH_FP8_QK) {
    bytes += align256(rows * args.head_dim);   // q8
    bytes += align256(rows * sizeof(float));   // q8_scale
  }
  return bytes;
}

cudaError_t launch_decode(const DecodeArgs& args, const Ablation& ablation, cudaStream_t stream, KernelInfo* info) {
  if (args.batch < 1 || args.q_heads < 1 || args.kv_heads < 1 || args.q_heads % args.kv_heads != 0 ||
      args.page_size < 1 || args.max_pages_per_seq < 1 || args.splits < 1 || args.head_dim < 1 || !args.q ||
      !args.k_pages ||
      !args.v_pages || !args.page_table || !args.lengths || !args.out) {
    return cudaErrorInvalidValue;
  }
  if ((args.k_path == TP_KPATH_FP8_QK && (!args.q8 || !args.q8_scale)) ||
      (args.splits > 1 && (!args.partial_out || !args.partial_lse)) || args.splits > kMaxCombineSplits ||
      kCombineThreads % args.head_dim != 0 ||
      (args.kv_dtype != TP_KV_K16V16 && (!args.k_scale || !args.v_scale))) {
    return cudaErrorInvalidValue;
  }
  const VariantEntry* entry = find_variant(args, ablation);
  if (!entry) return cudaErrorNotSupported;
  const int rows = args.batch * args.q_heads;

  if (args.k_path == TP_KPATH_FP8_QK) {  // q_quant: once per decode step
    switch (args.head_dim) {
      case 64: q_quant_kernel<64><<<rows, 32, 0, stream>>>(args.q, args.q8, args.q8_scale); break;
      case 128: q_quant_kernel<128><<<rows, 32, 0, stream>>>(args.q, args.q8, args.q8_scale); break;
      case 256: q_quant_kernel<256><<<rows, 32, 0, stream>>>(args.q, args.q8, args.q8_scale); break;
      default: return cudaErrorInvalidValue;
    }
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }

  if (const cudaError_t e = entry->launch(args, head_chunks_of(args), stream, info); e != cudaSuccess) return e;
  if (info) info->name = variant_name(*entry);

  if (args.splits > 1) {  // combine: log-sum-exp merge of the split partials
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(rows);
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
