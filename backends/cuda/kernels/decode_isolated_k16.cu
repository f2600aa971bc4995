// Isolated stage kernels of K16/V16 and K16/V8 (docs/stage-model.md, "Isolated stage costs").
#include "backends/cuda/kernels/variant_instantiation.cuh"

namespace tilepath::cuda::kernels {

void append_isolated_k16_variants(std::vector<VariantEntry>& out) {
  append_isolated_stages<KOperand::bf16, VOperand::bf16, false>(out, TP_KV_K16V16, TP_KPATH_K16, TP_MODE_NONE);
  append_isolated_stages<KOperand::bf16, VOperand::fp8_convert, false>(out, TP_KV_K16V8, TP_KPATH_K16, TP_MODE_FULL);
  append_isolated_stages<KOperand::bf16, VOperand::fp8_convert, true>(out, TP_KV_K16V8, TP_KPATH_K16,
                                                                      TP_MODE_SEPARATE_KV);
}

}  // namespace tilepath::cuda::kernels
