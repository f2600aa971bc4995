// Isolated stage kernels of K8/V8 on the transform K path, one kv head per CTA
// (docs/stage-model.md, "Isolated stage costs").
#include "backends/cuda/kernels/variant_instantiation.cuh"

namespace tilepath::cuda::kernels {

void append_isolated_k8v8_transform_variants(std::vector<VariantEntry>& out) {
  constexpr int kKv = TP_KV_K8V8, kPath = TP_KPATH_TRANSFORM;
  append_isolated_stages<KOperand::fp8_convert, VOperand::fp8_convert, false>(out, kKv, kPath, TP_MODE_FULL);
  append_isolated_stages<KOperand::fp8_convert, VOperand::fp8_mma, false>(out, kKv, kPath, TP_MODE_K_ONLY);
  append_isolated_stages<KOperand::fp8_convert, VOperand::fp8_convert, true>(out, kKv, kPath, TP_MODE_SEPARATE_KV);
}

}  // namespace tilepath::cuda::kernels
