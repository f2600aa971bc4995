// The 16-bit caches with wgmma (mma = wgmma), K and V by TMA (decode_wgmma.cuh):
//   K16/V16, K16/V8  QK on HGMMA (BF16) with K straight from the ring; PV on HGMMA, BF16 V as
//                    it is or E4M3 V converted to F16 in registers (full)
//   K8/V16           QK on QGMMA (fp8_qk) or HGMMA with K converted in registers (transform
//                    full); PV on HGMMA (BF16)
// D = 64, 128 and 256; their load_only kernels are in decode_wgmma_load_only.cu and they have
// no per-stage ablations: the stage costs of these cases stay unknown.
#include "backends/cuda/kernels/wgmma_launch.cuh"

namespace tilepath::cuda::kernels {

namespace {

template <int kD>
void append_head_dim(std::vector<VariantEntry>& out) {
  out.push_back(wgmma_entry<KOperand::bf16, VOperand::bf16, kD>(TP_KV_K16V16, TP_KPATH_K16, TP_MODE_NONE));
  out.push_back(wgmma_entry<KOperand::bf16, VOperand::fp8_convert, kD>(TP_KV_K16V8, TP_KPATH_K16, TP_MODE_FULL));
  out.push_back(wgmma_entry<KOperand::fp8_mma, VOperand::bf16, kD>(TP_KV_K8V16, TP_KPATH_FP8_QK, TP_MODE_NONE));
  out.push_back(wgmma_entry<KOperand::fp8_convert, VOperand::bf16, kD>(TP_KV_K8V16, TP_KPATH_TRANSFORM, TP_MODE_FULL));
}

}  // namespace

void append_16bit_wgmma_variants(std::vector<VariantEntry>& out) {
  append_head_dim<64>(out);
  append_head_dim<128>(out);
  append_head_dim<256>(out);
}

}  // namespace tilepath::cuda::kernels
