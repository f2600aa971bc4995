// The 16-bit caches with wgmma (mma = wgmma), K and V by TMA (decode_wgmma.cuh):
//   K16/V16, K16/V8  QK on HGMMA (BF16) with K straight from the ring; PV on HGMMA, BF16 V as
//                    it is or E4M3 V converted to F16 in registers (full)
//   K8/V16           QK on QGMMA (fp8_qk) or HGMMA with K converted in registers (transform
//                    full); PV on HGMMA (BF16)
// D = 64, 128 and 256; their load_only kernels are in decode_wgmma_load_only.cu, their
// compute_only and isolated compute stages at D = 128 in decode_wgmma_compute_ablations_16bit.cu.
#include "backends/cuda/kernels/wgmma_launch.cuh"

namespace tilepath::cuda::kernels {

void append_16bit_wgmma_variants(std::vector<VariantEntry>& out) {
  append_16bit_wgmma_entries<AblationKind::none, 64>(out);
  append_16bit_wgmma_entries<AblationKind::none, 128>(out);
  append_16bit_wgmma_entries<AblationKind::none, 256>(out);
}

}  // namespace tilepath::cuda::kernels
