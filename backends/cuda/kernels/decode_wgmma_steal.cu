// K8/V8 fp8_qk wgmma kernels with tiles handed out at run time (decode_wgmma_steal.cuh), at
// D = 128, for A/B runs against the plain kernels: TILEPATH_CUDA_WGMMA_STEAL=N (N >= 1: a
// stream is stolen from while at least N of its tiles are unclaimed) runs them where they exist.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "backends/cuda/kernels/decode_wgmma_steal.cuh"
#include "backends/cuda/kernels/wgmma_launch.cuh"

namespace tilepath::cuda::kernels {

namespace {

// The steal workspace of the process, grown as launches need it and zeroed when allocated
// (every launch that completes leaves the words and counters at zero). Its layout follows its
// capacity, not the launch: a launch of fewer streams must find its words where zeros are, not
// where a larger launch left its rows.
struct StealWorkspace {
  void* bytes = nullptr;
  int streams = 0, head_dim = 0;  // capacity
};

std::size_t align256(std::size_t n) { return (n + 255) / 256 * 256; }

cudaError_t steal_workspace(int streams, int head_dim, cudaStream_t stream, StealArgs* out) {
  static StealWorkspace ws;
  const auto layout = [](int n_streams, int d, std::size_t* claims, std::size_t* done, std::size_t* lse) {
    const std::size_t n = static_cast<std::size_t>(n_streams);
    const std::size_t rows = n * kStealMaxParticipants * kHeadsPerCta;
    *claims = align256(n * sizeof(unsigned long long));
    *done = align256(n * sizeof(unsigned int));
    *lse = align256(rows * sizeof(float));
    return *claims + *done + *lse + align256(rows * d * sizeof(float));
  };
  std::size_t claims = 0, done = 0, lse = 0;
  if (streams > ws.streams || head_dim > ws.head_dim) {
    if (ws.bytes) cudaFree(ws.bytes);
    const int n = std::max(streams, ws.streams), d = std::max(head_dim, ws.head_dim);
    ws = StealWorkspace{};
    const std::size_t need = layout(n, d, &claims, &done, &lse);
    if (const cudaError_t e = cudaMalloc(&ws.bytes, need); e != cudaSuccess) return e;
    if (const cudaError_t e = cudaMemsetAsync(ws.bytes, 0, need, stream); e != cudaSuccess) return e;
    ws.streams = n, ws.head_dim = d;
  }
  layout(ws.streams, ws.head_dim, &claims, &done, &lse);
  char* at = static_cast<char*>(ws.bytes);
  out->claims = reinterpret_cast<unsigned long long*>(at);
  out->done = reinterpret_cast<unsigned int*>(at + claims);
  out->partial_lse = reinterpret_cast<float*>(at + claims + done);
  out->partial_out = reinterpret_cast<float*>(at + claims + done + lse);
  return cudaSuccess;
}

template <class T>
KernelLaunchState& steal_launch_state() {
  static KernelLaunchState state;
  return state;
}

template <class T>
cudaError_t steal_resources(KernelResources* out) {
  return kernel_resources(&decode_wgmma_steal_kernel<T>, T::kThreads, T::kSmemBytes, steal_launch_state<T>(), out);
}

template <class T>
cudaError_t launch_wgmma_steal(const DecodeArgs& args, int head_chunks, int ctas_per_sm_cap, cudaStream_t stream,
                               KernelInfo* info) {
  WgmmaStealParams params{};
  if (const cudaError_t e = make_wgmma_params<T>(args, head_chunks, &params.w); e != cudaSuccess) return e;
  const dim3 grid = wgmma_grid<T>(args, head_chunks);
  const int streams = static_cast<int>(grid.x * grid.y * grid.z);
  if (const cudaError_t e = steal_workspace(streams, T::kHeadDim, stream, &params.steal); e != cudaSuccess) return e;
  KernelResources kernel;
  if (const cudaError_t e = steal_resources<T>(&kernel); e != cudaSuccess) return e;
  int device = 0, sms = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  if (const cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device); e != cudaSuccess)
    return e;
  // The CTAs that start while every SM is full wait for a free slot instead: only the grid's
  // last wave (the last CTAs the scheduler places) steals.
  params.steal.first_thief = std::max(0, streams - kernel.ctas_per_sm * sms);
  const char* n = std::getenv("TILEPATH_CUDA_WGMMA_STEAL");
  params.steal.min_remaining = std::max(1, n ? std::atoi(n) : 1);
  // TILEPATH_CUDA_WGMMA_STEAL_CLAIMS=0 (A/B runs): every owner takes all its tiles without a
  // claim, so nothing is stolen: the kernel's structure alone, against the plain kernel.
  const char* claims = std::getenv("TILEPATH_CUDA_WGMMA_STEAL_CLAIMS");
  params.steal.owner_block = claims && std::strcmp(claims, "0") == 0 ? std::numeric_limits<int>::max() : T::kStages;
  return launch_decode_kernel(&decode_wgmma_steal_kernel<T>, params, grid, dim3(T::kThreads), T::kSmemBytes,
                              T::kTileTokens, ctas_per_sm_cap, steal_launch_state<T>(), stream, info);
}

template <VOperand VO>
VariantEntry steal_entry(int mode) {
  using T = WgmmaStealTraits<KOperand::fp8_mma, VO, 128>;
  VariantEntry e{};
  e.kv_dtype = TP_KV_K8V8;
  e.k_path = TP_KPATH_FP8_QK;
  e.mode = mode;
  e.head_dim = 128;
  e.ablation = AblationKind::none;
  e.ablated_stage = -1;
  e.kv_heads_per_cta = 1;
  e.k_repr = TP_KREPR_PLAIN;
  e.launch = &launch_wgmma_steal<T>;
  e.mma = kMmaWgmma;
  e.resources = &steal_resources<T>;
  e.steal = true;
  return e;
}

}  // namespace

void append_k8v8_wgmma_steal_variants(std::vector<VariantEntry>& out) {
  out.push_back(steal_entry<VOperand::fp8_mma>(TP_MODE_K_ONLY));
  out.push_back(steal_entry<VOperand::fp8_convert>(TP_MODE_FULL));
}

}  // namespace tilepath::cuda::kernels
