// The load_only ablation of every wgmma kernel (decode_wgmma.cuh, WgmmaLoadOnlyTraits): the same
// CTA, TMA ring, prologue and epilogue with no per-tile compute, at every head dim. Its latency
// beside the full kernel's splits a wgmma case into the stream through the kernel's own
// geometry and the compute the ring does not hide. At D = 128 their compute side is measured too
// (decode_wgmma_compute_ablations_*.cu); at D = 64 and 256 the ring is all that is measured.
#include "backends/cuda/kernels/wgmma_launch.cuh"

namespace tilepath::cuda::kernels {

namespace {

template <int kD>
void append_head_dim(std::vector<VariantEntry>& out) {
  append_k8v8_wgmma_entries<AblationKind::load_only, kD>(out);
  append_16bit_wgmma_entries<AblationKind::load_only, kD>(out);
}

}  // namespace

void append_wgmma_load_only_variants(std::vector<VariantEntry>& out) {
  append_head_dim<64>(out);
  append_head_dim<128>(out);
  append_head_dim<256>(out);
}

}  // namespace tilepath::cuda::kernels
