// K8/V8 over a post-RoPE prebias K cache (the k_bias stage), the fp8_qk K path, full and k_only.
#include "backends/cuda/kernels/variant_instantiation.cuh"

namespace tilepath::cuda::kernels {

void append_k8v8_prebias_fp8qk_variants(std::vector<VariantEntry>& out) {
  constexpr int kKv = TP_KV_K8V8, kPath = TP_KPATH_FP8_QK;
  append_prebias_family<KOperand::fp8_mma, VOperand::fp8_convert>(out, kKv, kPath, TP_MODE_FULL);
  append_prebias_family<KOperand::fp8_mma, VOperand::fp8_mma>(out, kKv, kPath, TP_MODE_K_ONLY);
}

}  // namespace tilepath::cuda::kernels
