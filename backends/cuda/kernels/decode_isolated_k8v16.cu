// Isolated stage kernels of K8/V16 (docs/stage-model.md, "Isolated stage costs").
#include "backends/cuda/kernels/variant_instantiation.cuh"

namespace tilepath::cuda::kernels {

void append_isolated_k8v16_variants(std::vector<VariantEntry>& out) {
  constexpr int kKv = TP_KV_K8V16;
  append_isolated_stages<KOperand::fp8_convert, VOperand::bf16, false>(out, kKv, TP_KPATH_TRANSFORM, TP_MODE_FULL);
  append_isolated_stages<KOperand::fp8_convert, VOperand::bf16, true>(out, kKv, TP_KPATH_TRANSFORM,
                                                                      TP_MODE_SEPARATE_KV);
  append_isolated_stages<KOperand::fp8_mma, VOperand::bf16, false>(out, kKv, TP_KPATH_FP8_QK, TP_MODE_NONE);
}

}  // namespace tilepath::cuda::kernels
