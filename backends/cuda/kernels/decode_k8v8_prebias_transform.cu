// K8/V8 over a post-RoPE prebias K cache (the k_bias stage), the transform K path, full and k_only.
#include "backends/cuda/kernels/variant_instantiation.cuh"

namespace tilepath::cuda::kernels {

void append_k8v8_prebias_transform_variants(std::vector<VariantEntry>& out) {
  constexpr int kKv = TP_KV_K8V8, kPath = TP_KPATH_TRANSFORM;
  append_prebias_family<KOperand::fp8_convert, VOperand::fp8_convert>(out, kKv, kPath, TP_MODE_FULL);
  append_prebias_family<KOperand::fp8_convert, VOperand::fp8_mma>(out, kKv, kPath, TP_MODE_K_ONLY);
}

}  // namespace tilepath::cuda::kernels
