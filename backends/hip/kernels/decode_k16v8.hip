// K16/V8, the no-K-transform control: V converted to BF16 by the MFMA waves (full).
#include "backends/hip/kernels/variant_instantiation.h"

namespace tilepath::hip::kernels {

void append_k16v8_variants(std::vector<VariantEntry>& out) {
  append_family<TP_KV_K16V8, TP_KPATH_K16, TP_MODE_FULL>(out);
}

}  // namespace tilepath::hip::kernels
