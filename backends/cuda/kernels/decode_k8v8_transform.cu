// K8/V8 with the transform K path: full, k_only (FP8 PV), separate_kv.
#include "backends/cuda/kernels/variant_instantiation.cuh"

namespace tilepath::cuda::kernels {

void append_k8v8_transform_variants(std::vector<VariantEntry>& out) {
  constexpr int kKv = TP_KV_K8V8, kPath = TP_KPATH_TRANSFORM;
  append_family<KOperand::fp8_convert, VOperand::fp8_convert, false>(out, kKv, kPath, TP_MODE_FULL);
  append_family<KOperand::fp8_convert, VOperand::fp8_mma, false>(out, kKv, kPath, TP_MODE_K_ONLY);
  append_family<KOperand::fp8_convert, VOperand::fp8_convert, true>(out, kKv, kPath, TP_MODE_SEPARATE_KV);
}

}  // namespace tilepath::cuda::kernels
