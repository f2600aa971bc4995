// Isolated stage kernels of the K8/V8 variants with two kv heads per CTA
// (docs/stage-model.md, "Isolated stage costs").
#include "backends/cuda/kernels/variant_instantiation.cuh"

namespace tilepath::cuda::kernels {

void append_isolated_two_head_variants(std::vector<VariantEntry>& out) {
  constexpr int kKv = TP_KV_K8V8;
  append_isolated_stages<KOperand::fp8_mma, VOperand::fp8_convert, false, 2>(out, kKv, TP_KPATH_FP8_QK, TP_MODE_FULL);
  append_isolated_stages<KOperand::fp8_mma, VOperand::fp8_mma, false, 2>(out, kKv, TP_KPATH_FP8_QK, TP_MODE_K_ONLY);
  append_isolated_stages<KOperand::fp8_convert, VOperand::fp8_convert, false, 2>(out, kKv, TP_KPATH_TRANSFORM,
                                                                                 TP_MODE_FULL);
  append_isolated_stages<KOperand::fp8_convert, VOperand::fp8_mma, false, 2>(out, kKv, TP_KPATH_TRANSFORM,
                                                                             TP_MODE_K_ONLY);
}

}  // namespace tilepath::cuda::kernels
