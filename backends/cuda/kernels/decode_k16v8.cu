// K16/V8 variants (the no-K-transform control): V converted by the MMA warps (full)
// or by dedicated warps (separate_kv).
#include "backends/cuda/kernels/variant_instantiation.cuh"

namespace tilepath::cuda::kernels {

void append_k16v8_variants(std::vector<VariantEntry>& out) {
  append_family<KOperand::bf16, VOperand::fp8_convert, false>(out, TP_KV_K16V8, TP_KPATH_K16, TP_MODE_FULL);
  append_family<KOperand::bf16, VOperand::fp8_convert, true>(out, TP_KV_K16V8, TP_KPATH_K16, TP_MODE_SEPARATE_KV);
}

}  // namespace tilepath::cuda::kernels
