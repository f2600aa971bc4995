// The 16-bit caches (K16/V16, K16/V8, K8/V16) on wgmma with the cp.async ring (decode_wgmma.cuh,
// WgmmaCpAsyncRingTraits): the kernels of decode_16bit_wgmma.cu and their load_only for the
// page sizes the TMA boxes do not tile (1, 2 and 4 tokens among them), at D = 64, 128 and 256.
#include "backends/cuda/kernels/wgmma_launch.cuh"

namespace tilepath::cuda::kernels {

namespace {

template <int kD>
void append_head_dim(std::vector<VariantEntry>& out) {
  append_16bit_wgmma_entries<AblationKind::none, kD, WgmmaRing::cp_async>(out);
  append_16bit_wgmma_entries<AblationKind::load_only, kD, WgmmaRing::cp_async>(out);
}

}  // namespace

void append_16bit_wgmma_cp_async_variants(std::vector<VariantEntry>& out) {
  append_head_dim<64>(out);
  append_head_dim<128>(out);
  append_head_dim<256>(out);
}

}  // namespace tilepath::cuda::kernels
