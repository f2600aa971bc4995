// The load_only ablation of every wgmma kernel (decode_wgmma.cuh, kLoadOnly): the same CTA,
// TMA ring, prologue and epilogue with no per-tile compute, at every head dim. Its latency
// beside the full kernel's splits a wgmma case into the stream through the kernel's own
// geometry and the compute the ring does not hide; the wgmma kernels have no per-stage
// ablations, so their stage costs stay unknown.
#include "backends/cuda/kernels/wgmma_launch.cuh"

namespace tilepath::cuda::kernels {

namespace {

constexpr AblationKind kLoadOnly = AblationKind::load_only;

template <int kD>
void append_head_dim(std::vector<VariantEntry>& out) {
  // K8/V8 (decode_k8v8_wgmma.cu)
  out.push_back(
      wgmma_entry<KOperand::fp8_mma, VOperand::fp8_convert, kD, kLoadOnly>(TP_KV_K8V8, TP_KPATH_FP8_QK, TP_MODE_FULL));
  out.push_back(
      wgmma_entry<KOperand::fp8_mma, VOperand::fp8_mma, kD, kLoadOnly>(TP_KV_K8V8, TP_KPATH_FP8_QK, TP_MODE_K_ONLY));
  out.push_back(wgmma_entry<KOperand::fp8_convert, VOperand::fp8_convert, kD, kLoadOnly>(TP_KV_K8V8, TP_KPATH_TRANSFORM,
                                                                                         TP_MODE_FULL));
  out.push_back(wgmma_entry<KOperand::fp8_convert, VOperand::fp8_mma, kD, kLoadOnly>(TP_KV_K8V8, TP_KPATH_TRANSFORM,
                                                                                     TP_MODE_K_ONLY));
  // the 16-bit caches (decode_16bit_wgmma.cu)
  out.push_back(wgmma_entry<KOperand::bf16, VOperand::bf16, kD, kLoadOnly>(TP_KV_K16V16, TP_KPATH_K16, TP_MODE_NONE));
  out.push_back(
      wgmma_entry<KOperand::bf16, VOperand::fp8_convert, kD, kLoadOnly>(TP_KV_K16V8, TP_KPATH_K16, TP_MODE_FULL));
  out.push_back(
      wgmma_entry<KOperand::fp8_mma, VOperand::bf16, kD, kLoadOnly>(TP_KV_K8V16, TP_KPATH_FP8_QK, TP_MODE_NONE));
  out.push_back(
      wgmma_entry<KOperand::fp8_convert, VOperand::bf16, kD, kLoadOnly>(TP_KV_K8V16, TP_KPATH_TRANSFORM, TP_MODE_FULL));
}

}  // namespace

void append_wgmma_load_only_variants(std::vector<VariantEntry>& out) {
  append_head_dim<64>(out);
  append_head_dim<128>(out);
  append_head_dim<256>(out);
}

}  // namespace tilepath::cuda::kernels
