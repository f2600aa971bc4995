// K16/V16, the BF16 control: BF16 MFMA for QK and PV.
#include "backends/hip/kernels/variant_instantiation.h"

namespace tilepath::hip::kernels {

void append_k16v16_variants(std::vector<VariantEntry>& out) {
  append_family<TP_KV_K16V16, TP_KPATH_K16, TP_MODE_NONE>(out);
}

}  // namespace tilepath::hip::kernels
