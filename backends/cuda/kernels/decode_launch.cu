// backends/cuda/decode_launch.h: variant lookup and the launch of a whole decode step
// (the main kernel, then the split combine of combine_kernel.cuh).
#include "backends/cuda/decode_launch.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "backends/abi/tilepath_names.h"
#include "backends/cuda/kernels/combine_kernel.cuh"
#include "backends/cuda/kernels/decode_traits.cuh"
#include "backends/cuda/kernels/variant_table.h"
#include "core/perf/cuda_kernel_plan.h"

namespace tilepath::cuda {

namespace {

using kernels::kHeadsPerCta;
using kernels::VariantEntry;

const std::vector<VariantEntry>& variants() {
  static const std::vector<VariantEntry> table = [] {
    std::vector<VariantEntry> t;
    kernels::append_k16v16_variants(t);
    kernels::append_k16v8_variants(t);
    kernels::append_k8v16_variants(t);
    kernels::append_k8v8_transform_variants(t);
    kernels::append_k8v8_fp8qk_variants(t);
    kernels::append_k8v8_two_head_variants(t);
    kernels::append_k8v8_prebias_transform_variants(t);
    kernels::append_k8v8_prebias_fp8qk_variants(t);
    kernels::append_k8v8_wgmma_variants(t);
    kernels::append_16bit_wgmma_variants(t);
    kernels::append_wgmma_load_only_variants(t);
    kernels::append_wgmma_two_head_variants(t);
    kernels::append_k8v8_wgmma_cp_async_variants(t);
    kernels::append_wgmma_two_head_cp_async_variants(t);
    kernels::append_16bit_wgmma_cp_async_variants(t);
    kernels::append_isolated_k16_variants(t);
    kernels::append_isolated_k8v16_variants(t);
    kernels::append_isolated_k8v8_transform_variants(t);
    kernels::append_isolated_k8v8_fp8qk_variants(t);
    kernels::append_isolated_two_head_variants(t);
    kernels::append_isolated_prebias_transform_variants(t);
    kernels::append_isolated_prebias_fp8qk_variants(t);
    kernels::append_wgmma_compute_ablation_k8v8_variants(t);
    kernels::append_wgmma_compute_ablation_16bit_variants(t);
    return t;
  }();
  return table;
}

bool same_ablation(const VariantEntry& e, const Ablation& a) {
  if (e.ablation != a.kind) return false;
  if (a.kind == AblationKind::remove || a.kind == AblationKind::twice || a.kind == AblationKind::isolate)
    return e.ablated_stage == a.stage;
  return true;
}

// Whether a wgmma launch runs the kernels whose producer gathers with cp.async: at the pages the
// TMA boxes do not tile, and wherever TILEPATH_CUDA_WGMMA_RING=cp_async (A/B runs only: the
// ring's fill at the same pages). Read at every launch, as the GPU tests set and clear it.
bool wgmma_cp_async_ring(const DecodeArgs& args) {
  if (args.mma != kMmaWgmma) return false;
  const char* forced = std::getenv("TILEPATH_CUDA_WGMMA_RING");
  return !wgmma_tma_tiles_pages(args.page_size) || (forced && std::strcmp(forced, "cp_async") == 0);
}

const VariantEntry* find_variant(const DecodeArgs& args, const Ablation& ablation, int kv_heads_per_cta) {
  const bool cp_async_ring = wgmma_cp_async_ring(args);
  for (const VariantEntry& e : variants()) {
    if (e.kv_dtype == args.kv_dtype && e.k_path == args.k_path && e.mode == args.mode && e.head_dim == args.head_dim &&
        e.k_repr == args.k_repr && e.mma == args.mma && e.kv_heads_per_cta == kv_heads_per_cta &&
        e.cp_async_ring == cp_async_ring && same_ablation(e, ablation)) {
      return &e;
    }
  }
  return nullptr;
}

// An A/B switch of the wgmma CTA layout: 1 or 2 as the environment sets it, else 0 (unset or
// another value). Read at every launch: the GPU tests set and clear the switches between cases.
int wgmma_layout_switch(const char* name) {
  const char* value = std::getenv(name);
  if (value && std::strcmp(value, "1") == 0) return 1;
  if (value && std::strcmp(value, "2") == 0) return 2;
  return 0;
}

// The variant a launch runs: the choice of kv_heads_per_cta_for when it is compiled in. An
// ablation has the CTA layout of the kernel that runs, or none: the one-head ablation of a
// two-head kernel would measure another kernel.
const VariantEntry* find_variant(const DecodeArgs& args, const Ablation& ablation) {
  if (const int h = kv_heads_per_cta_for(args); h > 1) {
    if (const VariantEntry* e = find_variant(args, ablation, h)) return e;
    if (ablation.kind != AblationKind::none && find_variant(args, Ablation{}, h)) return nullptr;
  }
  return find_variant(args, ablation, 1);
}

// "decode_k8v8_transform_full_d128" (+ "_kvh2", "_wgmma", "_cp_async", then "_remove_qk", "_twice_pv",
// "_isolate_softmax", "_load_only" or "_compute_only"); static storage.
const char* variant_name(const VariantEntry& e) {
  static std::map<const VariantEntry*, std::string> names;
  auto it = names.find(&e);
  if (it != names.end()) return it->second.c_str();
  std::string n = std::string("decode_") + TP_NAME_OF(tp_kv_dtype_names, e.kv_dtype) + "_" +
                  TP_NAME_OF(tp_k_path_names, e.k_path) + "_" + TP_NAME_OF(tp_transform_mode_names, e.mode) + "_d" +
                  std::to_string(e.head_dim);
  if (e.k_repr == TP_KREPR_PREBIAS) n += "_prebias";
  if (e.kv_heads_per_cta > 1) n += "_kvh" + std::to_string(e.kv_heads_per_cta);
  if (e.mma == kMmaWgmma) n += "_wgmma";
  if (e.cp_async_ring) n += "_cp_async";
  if (e.ablation == AblationKind::remove || e.ablation == AblationKind::twice || e.ablation == AblationKind::isolate) {
    n += e.ablation == AblationKind::remove ? "_remove_" : e.ablation == AblationKind::twice ? "_twice_" : "_isolate_";
    n += TP_NAME_OF(tp_stage_names, e.ablated_stage);
  } else if (e.ablation == AblationKind::load_only) {
    n += "_load_only";
  } else if (e.ablation == AblationKind::compute_only) {
    n += "_compute_only";
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
// public interface
// ============================================================================

namespace {
// combine alone: the combine kernel over the split partials, without the main kernel.
bool is_isolated_combine(const Ablation& a) { return a.kind == AblationKind::isolate && a.stage == TP_STAGE_COMBINE; }

}  // namespace

bool decode_variant_available(const DecodeArgs& args, const Ablation& ablation) {
  if (is_isolated_combine(ablation)) return args.splits > 1 && find_variant(args, Ablation{}) != nullptr;
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

cudaError_t check_decode_args(const DecodeArgs& args) {
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
  const auto missing_or_misaligned = [](const void* ptr) {
    return !ptr || reinterpret_cast<std::uintptr_t>(ptr) % 16 != 0;
  };
  if (args.k_repr == TP_KREPR_PREBIAS &&
      (!args.k_bias || !args.bias_phase_step || missing_or_misaligned(args.bias_table) ||
       missing_or_misaligned(args.bias_step_rotation))) {
    return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

cudaError_t launch_decode(const DecodeArgs& args, const Ablation& ablation, cudaStream_t stream, KernelInfo* info) {
  if (const cudaError_t e = check_decode_args(args); e != cudaSuccess) return e;
  const bool combine_alone = is_isolated_combine(ablation);
  if (combine_alone && args.splits == 1) return cudaErrorNotSupported;
  const VariantEntry* entry = find_variant(args, combine_alone ? Ablation{} : ablation);
  if (!entry) return cudaErrorNotSupported;
  const int rows = args.batch * args.q_heads;

  if (!combine_alone) {
    // An ablation runs at the real kernel's CTAs per SM (kernel_launch.cuh, smem_for_ctas_per_sm).
    KernelResources real;
    if (ablation.kind != AblationKind::none) {
      if (const cudaError_t e = main_kernel_resources(args, &real); e != cudaSuccess) return e;
    }
    if (const cudaError_t e = entry->launch(args, head_chunks_of(args), real.ctas_per_sm, stream, info);
        e != cudaSuccess)
      return e;
    if (info) info->name = variant_name(*entry);
  }

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
  if (args.mma == kMmaWgmma) {
    // TILEPATH_CUDA_WGMMA_KV_HEADS_PER_CTA=1 or 2 (A/B runs only) overrides the policy; 2 runs
    // the two-head kernels where they exist (decode_wgmma_two_heads.cu).
    const int forced = wgmma_layout_switch("TILEPATH_CUDA_WGMMA_KV_HEADS_PER_CTA");
    if (forced == 1) return 1;
    if (forced == 2) return args.kv_heads % 2 == 0 ? 2 : 1;
    return perf::cuda_plan::wgmma_kv_heads_per_cta_for(args.kv_dtype == TP_KV_K8V8, args.head_dim, args.kv_heads);
  }
  return perf::cuda_plan::kv_heads_per_cta_for(args.kv_dtype == TP_KV_K8V8, args.mode == TP_MODE_SEPARATE_KV,
                                               args.head_dim, args.kv_heads, args.split_tokens);
}

int split_tokens_for(int max_len, int splits) { return perf::cuda_plan::split_tokens_for(max_len, splits); }

cudaError_t main_kernel_resources(const DecodeArgs& args, KernelResources* out) {
  *out = KernelResources{};
  const VariantEntry* entry = find_variant(args, Ablation{});
  if (!entry || !entry->resources) return cudaErrorNotSupported;
  return entry->resources(out);
}

namespace {

// The split count that fills the GPU with the CTAs of `entry` (splits of one kv head per CTA
// where no kernel is compiled in: the launch refuses the case anyway).
int splits_for(const VariantEntry* entry, const DecodeArgs& args, int max_len, int sm_count) {
  KernelResources kernel;
  if (!entry || !entry->resources || entry->resources(&kernel) != cudaSuccess) kernel.ctas_per_sm = 1;
  const int heads_per_cta = entry ? entry->kv_heads_per_cta : 1;
  const long long streams = static_cast<long long>(args.batch) * (args.kv_heads / heads_per_cta) * head_chunks_of(args);
  const auto family = args.mma == kMmaWgmma ? perf::cuda_plan::MmaFamily::wgmma : perf::cuda_plan::MmaFamily::mma_sync;
  return perf::cuda_plan::choose_splits(streams, max_len, sm_count, kernel.ctas_per_sm, family);
}

}  // namespace

int choose_splits(const DecodeArgs& args, int max_len, int sm_count) {
  // The mma.sync kernels choose their kv heads per CTA from the split's length, so their splits
  // are sized for one head per CTA. A wgmma CTA's layout depends on the shape alone
  // (wgmma_kv_heads_per_cta_for): its grid gets the splits of its own CTAs.
  if (args.mma != kMmaWgmma) return splits_for(find_variant(args, Ablation{}, 1), args, max_len, sm_count);
  return splits_for(find_variant(args, Ablation{}), args, max_len, sm_count);
}

}  // namespace tilepath::cuda
