// K8/V8 on wgmma with the cp.async ring (decode_wgmma.cuh, WgmmaCpAsyncRingTraits): the kernels
// of decode_k8v8_wgmma.cu and their load_only, the producer gathering each tile's K and V rows
// token by token in 16-byte cp.async chunks, for the page sizes the TMA boxes do not tile
// (1, 2 and 4 tokens among them). One kv head per CTA; the two-head ones are in
// decode_wgmma_cp_async_two_heads.cu.
#include "backends/cuda/kernels/wgmma_launch.cuh"

namespace tilepath::cuda::kernels {

namespace {

template <int kD>
void append_head_dim(std::vector<VariantEntry>& out) {
  append_k8v8_wgmma_entries<AblationKind::none, kD, WgmmaCta::one_head, WgmmaRing::cp_async>(out);
  append_k8v8_wgmma_entries<AblationKind::load_only, kD, WgmmaCta::one_head, WgmmaRing::cp_async>(out);
}

}  // namespace

void append_k8v8_wgmma_cp_async_variants(std::vector<VariantEntry>& out) {
  append_head_dim<64>(out);
  append_head_dim<128>(out);
  append_head_dim<256>(out);
}

}  // namespace tilepath::cuda::kernels
