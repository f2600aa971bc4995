// K16/V16 variants (BF16 K and V: nothing to convert).
#include "backends/cuda/kernels/variant_instantiation.cuh"

namespace tilepath::cuda::kernels {

void append_k16v16_variants(std::vector<VariantEntry>& out) {
  append_family<KOperand::bf16, VOperand::bf16, false>(out, TP_KV_K16V16, TP_KPATH_K16, TP_MODE_NONE);
}

}  // namespace tilepath::cuda::kernels
