// K8/V8 on wgmma with two kv heads per CTA and the cp.async ring (decode_wgmma.cuh,
// WgmmaTwoHeadTraits under WgmmaCpAsyncRingTraits): the kernels of decode_wgmma_two_heads.cu
// and their load_only for the page sizes the TMA boxes do not tile, at D = 64 (where the policy
// runs two heads) and 128 (the A/B switch TILEPATH_CUDA_WGMMA_KV_HEADS_PER_CTA=2).
#include "backends/cuda/kernels/wgmma_launch.cuh"

namespace tilepath::cuda::kernels {

void append_wgmma_two_head_cp_async_variants(std::vector<VariantEntry>& out) {
  append_k8v8_wgmma_entries<AblationKind::none, 64, WgmmaCta::two_heads, WgmmaRing::cp_async>(out);
  append_k8v8_wgmma_entries<AblationKind::none, 128, WgmmaCta::two_heads, WgmmaRing::cp_async>(out);
  append_k8v8_wgmma_entries<AblationKind::load_only, 64, WgmmaCta::two_heads, WgmmaRing::cp_async>(out);
  append_k8v8_wgmma_entries<AblationKind::load_only, 128, WgmmaCta::two_heads, WgmmaRing::cp_async>(out);
}

}  // namespace tilepath::cuda::kernels
