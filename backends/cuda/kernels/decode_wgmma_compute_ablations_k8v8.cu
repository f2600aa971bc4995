// The compute-side ablations of the K8/V8 wgmma kernels at D = 128 (one kv head per CTA, the
// layout the launch picks there): the consumer's whole work without the ring (compute_only,
// WgmmaComputeOnlyTraits) and each per-tile compute stage of the graph alone
// (WgmmaIsolatedTraits, decode_wgmma.cuh), for the kernel II model's compute agent.
#include "backends/cuda/kernels/wgmma_launch.cuh"

namespace tilepath::cuda::kernels {

void append_wgmma_compute_ablation_k8v8_variants(std::vector<VariantEntry>& out) {
  append_wgmma_compute_ablations<KOperand::fp8_mma, VOperand::fp8_convert>(out, TP_KV_K8V8, TP_KPATH_FP8_QK,
                                                                           TP_MODE_FULL);
  append_wgmma_compute_ablations<KOperand::fp8_mma, VOperand::fp8_mma>(out, TP_KV_K8V8, TP_KPATH_FP8_QK,
                                                                       TP_MODE_K_ONLY);
  append_wgmma_compute_ablations<KOperand::fp8_convert, VOperand::fp8_convert>(out, TP_KV_K8V8, TP_KPATH_TRANSFORM,
                                                                               TP_MODE_FULL);
  append_wgmma_compute_ablations<KOperand::fp8_convert, VOperand::fp8_mma>(out, TP_KV_K8V8, TP_KPATH_TRANSFORM,
                                                                           TP_MODE_K_ONLY);
}

}  // namespace tilepath::cuda::kernels
