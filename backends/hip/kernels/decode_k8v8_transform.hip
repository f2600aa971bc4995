// K8/V8 with the transform K path (BF16 Q, K converted, BF16 MFMA for QK):
// V converted (full) or FP8 PV on P quantized to FNUZ (k_only).
#include "backends/hip/kernels/variant_instantiation.h"

namespace tilepath::hip::kernels {

void append_k8v8_transform_variants(std::vector<VariantEntry>& out) {
  append_family<TP_KV_K8V8, TP_KPATH_TRANSFORM, TP_MODE_FULL>(out);
  append_family<TP_KV_K8V8, TP_KPATH_TRANSFORM, TP_MODE_K_ONLY>(out);
}

}  // namespace tilepath::hip::kernels
