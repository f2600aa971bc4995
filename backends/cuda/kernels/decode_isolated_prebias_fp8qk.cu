// Isolated stage kernels of the post-RoPE prebias K8/V8 variants on the fp8_qk K path,
// one and two kv heads per CTA (docs/stage-model.md, "Isolated stage costs").
#include "backends/cuda/kernels/variant_instantiation.cuh"

namespace tilepath::cuda::kernels {

void append_isolated_prebias_fp8qk_variants(std::vector<VariantEntry>& out) {
  constexpr int kKv = TP_KV_K8V8, kPath = TP_KPATH_FP8_QK;
  append_isolated_stages<KOperand::fp8_mma, VOperand::fp8_convert, false, 1, true>(out, kKv, kPath, TP_MODE_FULL);
  append_isolated_stages<KOperand::fp8_mma, VOperand::fp8_convert, false, 2, true>(out, kKv, kPath, TP_MODE_FULL);
  append_isolated_stages<KOperand::fp8_mma, VOperand::fp8_mma, false, 1, true>(out, kKv, kPath, TP_MODE_K_ONLY);
  append_isolated_stages<KOperand::fp8_mma, VOperand::fp8_mma, false, 2, true>(out, kKv, kPath, TP_MODE_K_ONLY);
}

}  // namespace tilepath::cuda::kernels
