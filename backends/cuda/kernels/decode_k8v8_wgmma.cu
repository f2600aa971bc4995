// K8/V8 with wgmma (mma = wgmma): QK on QGMMA (fp8_qk) or HGMMA with K converted in registers
// (transform), PV on QGMMA (k_only) or HGMMA (full), K and V by TMA (decode_wgmma.cuh).
// D = 64, 128 and 256; their load_only kernels are in decode_wgmma_load_only.cu, their
// compute_only and isolated compute stages at D = 128 in decode_wgmma_compute_ablations_k8v8.cu.
#include "backends/cuda/kernels/wgmma_launch.cuh"

namespace tilepath::cuda::kernels {

void append_k8v8_wgmma_variants(std::vector<VariantEntry>& out) {
  append_k8v8_wgmma_entries<AblationKind::none, 64>(out);
  append_k8v8_wgmma_entries<AblationKind::none, 128>(out);
  append_k8v8_wgmma_entries<AblationKind::none, 256>(out);
}

}  // namespace tilepath::cuda::kernels
