#pragma once
// The compiled kernel variants, as a table the launcher searches. Each per-dtype
// translation unit (decode_<dtype>*.cu) appends the variants it instantiates, so
// the expensive template instantiations spread over several files.

#include <cstdint>
#include <vector>

#include "backends/cuda/decode_launch.h"

namespace tilepath::cuda::kernels {

// Launches the main kernel of one variant (combine is launched after it when splits > 1).
// ctas_per_sm_cap: 0, or for an ablation kernel the real kernel's CTAs per SM, which the launch
// holds it to (smem_for_ctas_per_sm in kernel_launch.cuh).
using MainLaunchFn = cudaError_t (*)(const DecodeArgs& args, int head_chunks, int ctas_per_sm_cap, cudaStream_t stream,
                                     KernelInfo* info);
// The main kernel's resident CTAs per SM and registers (kernel_resources in kernel_launch.cuh).
using ResourcesFn = cudaError_t (*)(KernelResources* out);

struct VariantEntry {
  int kv_dtype;  // enum tp_kv_dtype
  int k_path;    // enum tp_k_path
  int mode;      // enum tp_transform_mode
  int head_dim;
  AblationKind ablation;
  int ablated_stage;  // enum tp_stage, -1 for none / load_only
  int kv_heads_per_cta;
  int k_repr;  // enum tp_k_repr: plain or prebias (the k_bias stage)
  MainLaunchFn launch;
  int mma = kMmaSync;  // DecodeArgs::mma
  ResourcesFn resources = nullptr;
  bool cp_async_ring = false;  // a wgmma kernel for pages the TMA boxes do not tile
};

void append_k16v16_variants(std::vector<VariantEntry>& out);
void append_k16v8_variants(std::vector<VariantEntry>& out);
void append_k8v16_variants(std::vector<VariantEntry>& out);
void append_k8v8_transform_variants(std::vector<VariantEntry>& out);
void append_k8v8_fp8qk_variants(std::vector<VariantEntry>& out);
void append_k8v8_two_head_variants(std::vector<VariantEntry>& out);
void append_k8v8_prebias_transform_variants(std::vector<VariantEntry>& out);
void append_k8v8_prebias_fp8qk_variants(std::vector<VariantEntry>& out);
void append_k8v8_wgmma_variants(std::vector<VariantEntry>& out);       // mma = wgmma (decode_wgmma.cuh)
void append_16bit_wgmma_variants(std::vector<VariantEntry>& out);      // K16/V16, K16/V8, K8/V16 on wgmma
void append_wgmma_load_only_variants(std::vector<VariantEntry>& out);  // the load_only of every wgmma kernel
void append_wgmma_two_head_variants(std::vector<VariantEntry>& out);   // K8/V8 wgmma, two kv heads per CTA
// The wgmma kernels above and their load_only with the cp.async ring, for the page sizes the
// TMA boxes do not tile (decode_wgmma_cp_async_*.cu).
void append_k8v8_wgmma_cp_async_variants(std::vector<VariantEntry>& out);
void append_wgmma_two_head_cp_async_variants(std::vector<VariantEntry>& out);
void append_16bit_wgmma_cp_async_variants(std::vector<VariantEntry>& out);
// The isolated stage kernels (AblationKind::isolate) of every mma.sync variant above at D = 128.
void append_isolated_k16_variants(std::vector<VariantEntry>& out);
void append_isolated_k8v16_variants(std::vector<VariantEntry>& out);
void append_isolated_k8v8_transform_variants(std::vector<VariantEntry>& out);
void append_isolated_k8v8_fp8qk_variants(std::vector<VariantEntry>& out);
void append_isolated_two_head_variants(std::vector<VariantEntry>& out);
void append_isolated_prebias_transform_variants(std::vector<VariantEntry>& out);
void append_isolated_prebias_fp8qk_variants(std::vector<VariantEntry>& out);
// The compute_only and isolated stage kernels of the one-head wgmma kernels at D = 128
// (decode_wgmma_compute_ablations_*.cu).
void append_wgmma_compute_ablation_k8v8_variants(std::vector<VariantEntry>& out);
void append_wgmma_compute_ablation_16bit_variants(std::vector<VariantEntry>& out);

}  // namespace tilepath::cuda::kernels
