// K8/V8 (fp8_qk and transform; full and k_only) with two kv heads per CTA, at D = 128:
// the kernels kv_heads_per_cta_for picks for long per-CTA token ranges.
#include "backends/cuda/kernels/variant_instantiation.cuh"

namespace tilepath::cuda::kernels {

void append_k8v8_two_head_variants(std::vector<VariantEntry>& out) {
  constexpr int kKv = TP_KV_K8V8;
  append_two_head_family<KOperand::fp8_mma, VOperand::fp8_convert>(out, kKv, TP_KPATH_FP8_QK, TP_MODE_FULL);
  append_two_head_family<KOperand::fp8_mma, VOperand::fp8_mma>(out, kKv, TP_KPATH_FP8_QK, TP_MODE_K_ONLY);
  append_two_head_family<KOperand::fp8_convert, VOperand::fp8_convert>(out, kKv, TP_KPATH_TRANSFORM, TP_MODE_FULL);
  append_two_head_family<KOperand::fp8_convert, VOperand::fp8_mma>(out, kKv, TP_KPATH_TRANSFORM, TP_MODE_K_ONLY);
}

}  // namespace tilepath::cuda::kernels
