// K8/V8 with the fp8_qk K path (FNUZ Q, FP8 MFMA for QK, K scale after it):
// V converted (full) or FP8 PV on P quantized to FNUZ (k_only).
#include "backends/hip/kernels/variant_instantiation.h"

namespace tilepath::hip::kernels {

void append_k8v8_fp8qk_variants(std::vector<VariantEntry>& out) {
  append_family<TP_KV_K8V8, TP_KPATH_FP8_QK, TP_MODE_FULL>(out);
  append_family<TP_KV_K8V8, TP_KPATH_FP8_QK, TP_MODE_K_ONLY>(out);
}

}  // namespace tilepath::hip::kernels
