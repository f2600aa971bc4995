// K8/V8 on wgmma with two consumer warpgroups per kv head taking alternate tiles
// (decode_wgmma.cuh, WgmmaTileGroupTraits), at D = 64 and 128, with their load_only. Selected
// only by the A/B switch TILEPATH_CUDA_WGMMA_TILE_GROUPS=2 (decode_launch.cu): they measured
// slower than one warpgroup per kv head where they were meant to help, at B = 1 (docs/perf-notes.md,
// "wgmma CTA layouts"), so no policy chooses them.
#include "backends/cuda/kernels/wgmma_launch.cuh"

namespace tilepath::cuda::kernels {

void append_wgmma_tile_group_variants(std::vector<VariantEntry>& out) {
  append_k8v8_wgmma_entries<AblationKind::none, 64, WgmmaCta::tile_groups>(out);
  append_k8v8_wgmma_entries<AblationKind::none, 128, WgmmaCta::tile_groups>(out);
  append_k8v8_wgmma_entries<AblationKind::load_only, 64, WgmmaCta::tile_groups>(out);
  append_k8v8_wgmma_entries<AblationKind::load_only, 128, WgmmaCta::tile_groups>(out);
}

}  // namespace tilepath::cuda::kernels
