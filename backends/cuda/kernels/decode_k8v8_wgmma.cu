// K8/V8 with wgmma (mma = wgmma): QK on QGMMA (fp8_qk) or HGMMA with K converted in registers
// (transform), PV on QGMMA (k_only) or HGMMA (full), K and V by TMA (decode_wgmma.cuh).
// D = 64, 128 and 256; their load_only kernels are in decode_wgmma_load_only.cu and they have
// no per-stage ablations: the stage costs of these cases stay unknown.
#include "backends/cuda/kernels/wgmma_launch.cuh"

namespace tilepath::cuda::kernels {

namespace {

template <int kD>
void append_head_dim(std::vector<VariantEntry>& out) {
  out.push_back(wgmma_entry<KOperand::fp8_mma, VOperand::fp8_convert, kD>(TP_KV_K8V8, TP_KPATH_FP8_QK, TP_MODE_FULL));
  out.push_back(wgmma_entry<KOperand::fp8_mma, VOperand::fp8_mma, kD>(TP_KV_K8V8, TP_KPATH_FP8_QK, TP_MODE_K_ONLY));
  out.push_back(
      wgmma_entry<KOperand::fp8_convert, VOperand::fp8_convert, kD>(TP_KV_K8V8, TP_KPATH_TRANSFORM, TP_MODE_FULL));
  out.push_back(
      wgmma_entry<KOperand::fp8_convert, VOperand::fp8_mma, kD>(TP_KV_K8V8, TP_KPATH_TRANSFORM, TP_MODE_K_ONLY));
}

}  // namespace

void append_k8v8_wgmma_variants(std::vector<VariantEntry>& out) {
  append_head_dim<64>(out);
  append_head_dim<128>(out);
  append_head_dim<256>(out);
}

}  // namespace tilepath::cuda::kernels
