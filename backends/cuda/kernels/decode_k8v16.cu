// K8/V16 variants: K converted (transform: full, separate_kv) or fed to the FP8 MMA (fp8_qk).
#include "backends/cuda/kernels/variant_instantiation.cuh"

namespace tilepath::cuda::kernels {

void append_k8v16_variants(std::vector<VariantEntry>& out) {
  append_family<KOperand::fp8_convert, VOperand::bf16, false>(out, TP_KV_K8V16, TP_KPATH_TRANSFORM, TP_MODE_FULL);
  append_family<KOperand::fp8_convert, VOperand::bf16, true>(out, TP_KV_K8V16, TP_KPATH_TRANSFORM, TP_MODE_SEPARATE_KV);
  append_family<KOperand::fp8_mma, VOperand::bf16, false>(out, TP_KV_K8V16, TP_KPATH_FP8_QK, TP_MODE_NONE);
}

}  // namespace tilepath::cuda::kernels
