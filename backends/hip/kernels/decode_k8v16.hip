// K8/V16: K converted to BF16 (transform) or fed to the FP8 MFMA against FNUZ Q (fp8_qk).
#include "backends/hip/kernels/variant_instantiation.h"

namespace tilepath::hip::kernels {

void append_k8v16_variants(std::vector<VariantEntry>& out) {
  append_family<TP_KV_K8V16, TP_KPATH_TRANSFORM, TP_MODE_FULL>(out);
  append_family<TP_KV_K8V16, TP_KPATH_FP8_QK, TP_MODE_NONE>(out);
}

}  // namespace tilepath::hip::kernels
