// The compute-side ablations of the 16-bit caches' wgmma kernels at D = 128 (K16/V16, K16/V8,
// K8/V16): the consumer's whole work without the ring (compute_only, WgmmaComputeOnlyTraits)
// and each per-tile compute stage of the graph alone (WgmmaIsolatedTraits, decode_wgmma.cuh),
// for the kernel II model's compute agent.
#include "backends/cuda/kernels/wgmma_launch.cuh"

namespace tilepath::cuda::kernels {

void append_wgmma_compute_ablation_16bit_variants(std::vector<VariantEntry>& out) {
  append_wgmma_compute_ablations<KOperand::bf16, VOperand::bf16>(out, TP_KV_K16V16, TP_KPATH_K16, TP_MODE_NONE);
  append_wgmma_compute_ablations<KOperand::bf16, VOperand::fp8_convert>(out, TP_KV_K16V8, TP_KPATH_K16, TP_MODE_FULL);
  append_wgmma_compute_ablations<KOperand::fp8_mma, VOperand::bf16>(out, TP_KV_K8V16, TP_KPATH_FP8_QK, TP_MODE_NONE);
  append_wgmma_compute_ablations<KOperand::fp8_convert, VOperand::bf16>(out, TP_KV_K8V16, TP_KPATH_TRANSFORM,
                                                                        TP_MODE_FULL);
}

}  // namespace tilepath::cuda::kernels
