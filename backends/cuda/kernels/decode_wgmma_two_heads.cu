// K8/V8 on wgmma with two kv heads per CTA (decode_wgmma.cuh, WgmmaTwoHeadTraits): a consumer
// warpgroup per head, both heads' tiles of the same pages in each ring slot (at D = 64 one
// 128-byte row per token, one TMA box over both heads), at D = 64 and 128, with their
// load_only. The policy runs them at D = 64 (wgmma_kv_heads_per_cta_for in
// core/perf/cuda_kernel_plan.h); the A/B switch TILEPATH_CUDA_WGMMA_KV_HEADS_PER_CTA=1 or 2
// (decode_launch.cu) overrides it.
#include "backends/cuda/kernels/wgmma_launch.cuh"

namespace tilepath::cuda::kernels {

void append_wgmma_two_head_variants(std::vector<VariantEntry>& out) {
  append_k8v8_wgmma_entries<AblationKind::none, 64, WgmmaCta::two_heads>(out);
  append_k8v8_wgmma_entries<AblationKind::none, 128, WgmmaCta::two_heads>(out);
  append_k8v8_wgmma_entries<AblationKind::load_only, 64, WgmmaCta::two_heads>(out);
  append_k8v8_wgmma_entries<AblationKind::load_only, 128, WgmmaCta::two_heads>(out);
}

}  // namespace tilepath::cuda::kernels
