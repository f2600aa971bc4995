#pragma once
// Host side of the wgmma kernels (decode_wgmma.cuh): the TMA tensor maps of the K and V page
// pools, the launch, and the variant table's entry. Included by the decode_*_wgmma.cu files,
// one per dtype family.
#include <cstdlib>
#include <cstring>
#include <type_traits>
#ifdef TILEPATH_KERNEL_TRACE
#include <cstdio>
#include <vector>
#endif

#include "backends/cuda/kernels/decode_wgmma.cuh"
#include "backends/cuda/kernels/kernel_launch.cuh"
#include "backends/cuda/kernels/variant_table.h"

namespace tilepath::cuda::kernels {

using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled through the runtime's driver entry point: the plugin links no libcuda.
inline cudaError_t encode_tiled_fn(EncodeTiledFn* fn) {
  static EncodeTiledFn cached = nullptr;
  if (!cached) {
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult found{};
    const cudaError_t e =
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &entry, 12000, cudaEnableDefault, &found);
    if (e != cudaSuccess) return e;
    if (found != cudaDriverEntryPointSuccess || !entry) return cudaErrorNotSupported;
    cached = reinterpret_cast<EncodeTiledFn>(entry);
  }
  *fn = cached;
  return cudaSuccess;
}

// The page pool [num_pages][page_size][kv_heads][D] of E4M3 or BF16 as a 4-D tensor of bytes
// (innermost first: a row of T::kHeadsPerRow adjacent heads' bytes, rows of heads, slot in
// page, page), boxes of (one column block of a row, 1 row of heads, box tokens, 1 page),
// written into shared memory in the swizzle the wgmma descriptors read (SwizzledTile: 128
// bytes, or 64 for 64-byte rows); coordinates past the pool read zeros. L2 promotion by a
// box row's bytes, as measured on the H200 for E4M3 (bench/results/grid/README.md): at D = 128 a
// 256-byte promotion also fetched the next head's row, which its own CTA rarely found still in
// L2 (B = 16, S = 32768: 1222 MB read from DRAM for 1074 MB of K and V; without it 1074 MB,
// 284 -> 252 us), and D = 256 is faster without it too; at D = 64 four heads' 64-byte rows share
// 256 bytes and B = 64, S = 32768 took 547 us with it against 716 without (B = 32: 353 against
// 396), for one head's rows per CTA. The two-head CTAs' 128-byte rows of two D = 64 heads are
// faster without it: fp8_qk k_only 494.5 against 523.7 us at B = 64, S = 32768, 68.4 against
// 73.3 at B = 64, S = 4096 (bench/results/wgmma-d64-wide-rows/, call 1). BF16 rows (128 bytes
// and more) get none, as the wider E4M3 rows; not measured with it.
// TILEPATH_CUDA_WGMMA_L2_PROMOTION=none or 256 (A/B runs only) overrides the rule.
inline CUtensorMapL2promotion l2_promotion_for(int row_bytes) {
  if (const char* forced = std::getenv("TILEPATH_CUDA_WGMMA_L2_PROMOTION")) {
    if (std::strcmp(forced, "none") == 0) return CU_TENSOR_MAP_L2_PROMOTION_NONE;
    if (std::strcmp(forced, "256") == 0) return CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
  }
  return row_bytes == 64 ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B : CU_TENSOR_MAP_L2_PROMOTION_NONE;
}

template <class Tile, int kHeadsPerRow>
cudaError_t encode_page_pool(const void* pool, const DecodeArgs& a, CUtensorMap* map) {
  EncodeTiledFn encode = nullptr;
  if (const cudaError_t e = encode_tiled_fn(&encode); e != cudaSuccess) return e;
  const cuuint64_t row = static_cast<cuuint64_t>(Tile::kRowBytes);  // one token of kHeadsPerRow kv heads, in bytes
  const cuuint64_t rows = static_cast<cuuint64_t>(a.kv_heads / kHeadsPerRow);
  const cuuint64_t dims[4] = {row, rows, static_cast<cuuint64_t>(a.page_size), static_cast<cuuint64_t>(a.num_pages)};
  const cuuint64_t strides[3] = {row, row * rows, row * rows * a.page_size};  // bytes, dims 1..3
  const cuuint32_t box[4] = {static_cast<cuuint32_t>(Tile::kSwizzleBytes), 1u,
                             static_cast<cuuint32_t>(wgmma_box_tokens(a.page_size)), 1u};
  const cuuint32_t element_strides[4] = {1u, 1u, 1u, 1u};
  const CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 4, const_cast<void*>(pool), dims, strides, box,
                            element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            Tile::kSwizzleBytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B,
                            l2_promotion_for(Tile::kRowBytes), CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

// What the launches of decode_wgmma_kernel<T> remember.
template <class T>
KernelLaunchState& wgmma_launch_state() {
  static KernelLaunchState state;
  return state;
}

template <class T>
cudaError_t wgmma_resources(KernelResources* out) {
  return kernel_resources(&decode_wgmma_kernel<T>, T::kThreads, T::kSmemBytes, wgmma_launch_state<T>(), out);
}

#ifdef TILEPATH_KERNEL_TRACE
// The CTAs' trace records of the launch just made, printed as bench/kernel_trace.py reads them:
// the mma.sync kernel's TR line with the start's steps (tp_start) at its end, then the ring's TW
// line (whether this is the load_only ablation; cycles summed over the CTA's tiles: the first
// consumer thread waiting for tiles to land, its work from a landing to the tile's end, the
// producer's first lane waiting for free slots; then the parts of the work: qk from the landing,
// softmax, v_prep to the slot's release, and the rest: rescale, the Pᵀ barrier and pv).
inline void print_wgmma_trace(const WgmmaTraceRecord* records, std::size_t ctas, cudaStream_t stream) {
  std::vector<WgmmaTraceRecord> h(ctas);
  if (cudaStreamSynchronize(stream) != cudaSuccess ||
      cudaMemcpy(h.data(), records, ctas * sizeof(WgmmaTraceRecord), cudaMemcpyDeviceToHost) != cudaSuccess) {
    std::printf("TRACE lost: %s\n", cudaGetErrorString(cudaGetLastError()));
    return;
  }
  for (const WgmmaTraceRecord& r : h) {
    const long long* st = r.stamps;
    std::printf(
        "TR %d %d %d sm %d g0 %llu g9 %llu prolog %lld wait %lld q %lld tile0 %lld cons0 %lld cons1 %lld "
        "loop %lld joined %lld merge %lld tiles %d param %lld page %lld len %lld sync %lld producer %lld issue %lld\n",
        r.x, r.y, r.z, r.sm, r.g0, r.g9, st[0], st[1], st[2], st[4], st[5], st[6], st[3], st[7], r.end, r.tiles,
        r.start[0], r.start[1], r.start[2], r.start[3], r.start[4], r.start[5]);
    std::printf(
        "TW %d %d %d load_only %d land_wait %lld work %lld free_wait %lld tiles %d qk %lld softmax %lld "
        "v_prep %lld pv %lld\n",
        r.x, r.y, r.z, r.load_only, r.ring[0], r.ring[1], r.ring[2], r.tiles, r.ring[3], r.ring[4], r.ring[5],
        r.ring[6]);
  }
  std::fflush(stdout);
}
#endif

// The CTAs of adjacent kv heads launched as one cluster (core/perf/cuda_kernel_plan.h,
// wgmma_cluster_kv_heads): for K8/V8, pairs where the grid runs more than one wave of the GPU's
// CTA slots at the kernel's occupancy (an ablation's cap: the real kernel's, so both launch alike).
// TILEPATH_CUDA_WGMMA_CLUSTER=N (A/B runs only; 1 to 8, dividing the grid's kv-head CTAs)
// overrides it; read at every launch, as the GPU tests set and clear it between cases.
template <class T>
cudaError_t wgmma_cluster_kv_heads_for(const DecodeArgs& args, dim3 grid, int ctas_per_sm_cap, int* out) {
  *out = 1;
  if (const char* forced = std::getenv("TILEPATH_CUDA_WGMMA_CLUSTER")) {
    const int n = std::atoi(forced);
    if (n >= 1 && n <= 8 && grid.y % unsigned(n) == 0) {
      *out = n;
      return cudaSuccess;
    }
  }
  KernelResources own{};
  if (const cudaError_t e = wgmma_resources<T>(&own); e != cudaSuccess) return e;
  int device = 0, sms = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  if (const cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device); e != cudaSuccess)
    return e;
  const long long slots = static_cast<long long>(sms) * (ctas_per_sm_cap > 0 ? ctas_per_sm_cap : own.ctas_per_sm);
  const long long ctas = static_cast<long long>(grid.x) * grid.y * grid.z;
  *out = perf::cuda_plan::wgmma_cluster_kv_heads(args.kv_dtype == TP_KV_K8V8, ctas, slots, int(grid.y));
  return cudaSuccess;
}

template <class T>
cudaError_t launch_wgmma(const DecodeArgs& args, int head_chunks, int ctas_per_sm_cap, cudaStream_t stream,
                         KernelInfo* info) {
  // The TMA kernels take the pages their boxes tile; the cp.async ring takes every page size.
  const bool pages_fit = T::kCpAsyncRing || wgmma_tma_tiles_pages(args.page_size);
  if (args.head_dim != T::kHeadDim || !pages_fit || args.page_size < 1 || args.num_pages < 1 ||
      args.kv_heads % T::kKvHeadsPerCta != 0)
    return cudaErrorNotSupported;
  // The cp.async ring names a pool row (token x rows of kv heads) in 32 bits, ~0u past the end.
  if (T::kCpAsyncRing &&
      static_cast<long long>(args.num_pages) * args.page_size * (args.kv_heads / T::kHeadsPerRow) >= 0xFFFFFFFFll)
    return cudaErrorNotSupported;
  WgmmaParams params{};
  params.base = KernelParams{args, head_chunks, page_shift_of(args.page_size), 0u};
  if constexpr (!T::kCpAsyncRing) {  // the cp.async ring reads the pools through DecodeArgs
    // The maps depend only on the pools and the shape: encoded again only when those change.
    static CUtensorMap k_map, v_map;
    static DecodeArgs encoded_for{};
    const bool same = encoded_for.k_pages == args.k_pages && encoded_for.v_pages == args.v_pages &&
                      encoded_for.num_pages == args.num_pages && encoded_for.page_size == args.page_size &&
                      encoded_for.kv_heads == args.kv_heads && encoded_for.head_dim == args.head_dim;
    if (!same) {
      if (const cudaError_t e = encode_page_pool<typename T::KTile, T::kHeadsPerRow>(args.k_pages, args, &k_map);
          e != cudaSuccess)
        return e;
      if (const cudaError_t e = encode_page_pool<typename T::VTile, T::kHeadsPerRow>(args.v_pages, args, &v_map);
          e != cudaSuccess)
        return e;
      encoded_for = args;
    }
    params.k_map = k_map;
    params.v_map = v_map;
  }

  const dim3 grid(args.splits, args.kv_heads / T::kKvHeadsPerCta * head_chunks, args.batch);
  int cluster = 1;
  if (const cudaError_t e = wgmma_cluster_kv_heads_for<T>(args, grid, ctas_per_sm_cap, &cluster); e != cudaSuccess)
    return e;
#ifdef TILEPATH_KERNEL_TRACE
  static WgmmaTraceRecord* trace = nullptr;
  static std::size_t trace_ctas = 0;
  const std::size_t ctas = std::size_t(grid.x) * grid.y * grid.z;
  if (ctas > trace_ctas) {
    cudaFree(trace);
    trace = nullptr, trace_ctas = 0;
    if (const cudaError_t e = cudaMalloc(&trace, ctas * sizeof(WgmmaTraceRecord)); e != cudaSuccess) return e;
    trace_ctas = ctas;
  }
  params.trace = trace;
  const cudaError_t launched =
      launch_decode_kernel(&decode_wgmma_kernel<T>, params, grid, dim3(T::kThreads), T::kSmemBytes, T::kTileTokens,
                           ctas_per_sm_cap, wgmma_launch_state<T>(), stream, info, cluster);
  if (launched == cudaSuccess) print_wgmma_trace(trace, ctas, stream);
  return launched;
#else
  return launch_decode_kernel(&decode_wgmma_kernel<T>, params, grid, dim3(T::kThreads), T::kSmemBytes, T::kTileTokens,
                              ctas_per_sm_cap, wgmma_launch_state<T>(), stream, info, cluster);
#endif
}

// How a wgmma CTA uses its consumer warpgroups: one kv head, or two kv heads (a warpgroup each).
enum class WgmmaCta { one_head, two_heads };
// How its producer fills the ring: TMA boxes, or 16-byte cp.async gathers (pages the boxes do
// not tile).
enum class WgmmaRing { tma, cp_async };

template <KOperand KO, VOperand VO, int kD, WgmmaCta kCta>
using WgmmaFullTraitsOf =
    std::conditional_t<kCta == WgmmaCta::one_head, WgmmaTraits<KO, VO, kD>, WgmmaTwoHeadTraits<KO, VO, kD>>;
template <KOperand KO, VOperand VO, int kD, WgmmaCta kCta>
using WgmmaLoadOnlyTraitsOf = std::conditional_t<kCta == WgmmaCta::one_head, WgmmaLoadOnlyTraits<KO, VO, kD>,
                                                 WgmmaTwoHeadLoadOnlyTraits<KO, VO, kD>>;
template <class T, WgmmaRing kRing>
using WgmmaRingTraitsOf = std::conditional_t<kRing == WgmmaRing::tma, T, WgmmaCpAsyncRingTraits<T>>;
// The kernel type of (KO, VO, kD) with CTA layout kCta and ring kRing, or of its load_only ablation.
template <KOperand KO, VOperand VO, int kD, AblationKind kAblation, WgmmaCta kCta, WgmmaRing kRing = WgmmaRing::tma>
using WgmmaKernelTraits =
    WgmmaRingTraitsOf<std::conditional_t<kAblation == AblationKind::load_only, WgmmaLoadOnlyTraitsOf<KO, VO, kD, kCta>,
                                         WgmmaFullTraitsOf<KO, VO, kD, kCta>>,
                      kRing>;

// The variant table's entry of the kernel of traits T: a wgmma kernel of (kv, path, mode) or one
// of its ablations (kind, and the isolated stage or -1).
template <class T>
VariantEntry wgmma_entry_of(int kv_dtype, int k_path, int mode, AblationKind kind, int stage) {
  VariantEntry e{};
  e.kv_dtype = kv_dtype;
  e.k_path = k_path;
  e.mode = mode;
  e.head_dim = T::kHeadDim;
  e.ablation = kind;
  e.ablated_stage = stage;
  e.kv_heads_per_cta = T::kKvHeadsPerCta;
  e.k_repr = TP_KREPR_PLAIN;
  e.launch = &launch_wgmma<T>;
  e.mma = kMmaWgmma;
  e.resources = &wgmma_resources<T>;
  e.cp_async_ring = T::kCpAsyncRing;
  return e;
}

// The variant table's entry of the wgmma kernel of (KO, VO, kD), or of its load_only ablation.
template <KOperand KO, VOperand VO, int kD, AblationKind kAblation = AblationKind::none,
          WgmmaCta kCta = WgmmaCta::one_head, WgmmaRing kRing = WgmmaRing::tma>
VariantEntry wgmma_entry(int kv_dtype, int k_path, int mode) {
  static_assert(kAblation == AblationKind::none || kAblation == AblationKind::load_only,
                "the wgmma kernels have no remove or twice ablations; isolate and compute_only: "
                "append_wgmma_compute_ablations");
  return wgmma_entry_of<WgmmaKernelTraits<KO, VO, kD, kAblation, kCta, kRing>>(kv_dtype, k_path, mode, kAblation, -1);
}

// The wgmma kernels of one dtype family at head dim kD (kAblation: none for the kernels
// themselves, load_only for their ablation) in CTA layout kCta with ring kRing: one list per
// family, shared by the translation units of the kernels, of their load_only, of the other CTA
// layouts and of the cp.async ring.
template <AblationKind kAblation, int kD, WgmmaCta kCta = WgmmaCta::one_head, WgmmaRing kRing = WgmmaRing::tma>
void append_k8v8_wgmma_entries(std::vector<VariantEntry>& out) {
  out.push_back(wgmma_entry<KOperand::fp8_mma, VOperand::fp8_convert, kD, kAblation, kCta, kRing>(
      TP_KV_K8V8, TP_KPATH_FP8_QK, TP_MODE_FULL));
  out.push_back(wgmma_entry<KOperand::fp8_mma, VOperand::fp8_mma, kD, kAblation, kCta, kRing>(
      TP_KV_K8V8, TP_KPATH_FP8_QK, TP_MODE_K_ONLY));
  out.push_back(wgmma_entry<KOperand::fp8_convert, VOperand::fp8_convert, kD, kAblation, kCta, kRing>(
      TP_KV_K8V8, TP_KPATH_TRANSFORM, TP_MODE_FULL));
  out.push_back(wgmma_entry<KOperand::fp8_convert, VOperand::fp8_mma, kD, kAblation, kCta, kRing>(
      TP_KV_K8V8, TP_KPATH_TRANSFORM, TP_MODE_K_ONLY));
}

// The isolated kernel of compute stage kStage of the one-head D = 128 wgmma kernel of (KO, VO).
template <KOperand KO, VOperand VO, int kStage>
VariantEntry wgmma_isolated_entry(int kv_dtype, int k_path, int mode) {
  return wgmma_entry_of<WgmmaIsolatedTraits<KO, VO, 128, kStage>>(kv_dtype, k_path, mode, AblationKind::isolate,
                                                                  kStage);
}

// The compute-side ablations of the one-head D = 128 wgmma kernel of (KO, VO): its compute_only
// (WgmmaComputeOnlyTraits) and the isolated kernel of every per-tile compute stage of its graph
// (WgmmaIsolatedTraits). k_load and v_load have no isolated kernels (the load_only kernel measures
// the ring whole), nor has q_quant (once per step).
template <KOperand KO, VOperand VO>
void append_wgmma_compute_ablations(std::vector<VariantEntry>& out, int kv_dtype, int k_path, int mode) {
  out.push_back(
      wgmma_entry_of<WgmmaComputeOnlyTraits<KO, VO, 128>>(kv_dtype, k_path, mode, AblationKind::compute_only, -1));
  if constexpr (KO == KOperand::fp8_convert)  // transform: K converted in registers
    out.push_back(wgmma_isolated_entry<KO, VO, TP_STAGE_K_PREP>(kv_dtype, k_path, mode));
  out.push_back(wgmma_isolated_entry<KO, VO, TP_STAGE_QK>(kv_dtype, k_path, mode));
  out.push_back(wgmma_isolated_entry<KO, VO, TP_STAGE_SOFTMAX>(kv_dtype, k_path, mode));
  if constexpr (VO == VOperand::fp8_convert)  // E4M3 V converted to F16 (full)
    out.push_back(wgmma_isolated_entry<KO, VO, TP_STAGE_V_PREP>(kv_dtype, k_path, mode));
  out.push_back(wgmma_isolated_entry<KO, VO, TP_STAGE_PV>(kv_dtype, k_path, mode));
  out.push_back(wgmma_isolated_entry<KO, VO, TP_STAGE_ACCUM>(kv_dtype, k_path, mode));
}

template <AblationKind kAblation, int kD, WgmmaRing kRing = WgmmaRing::tma>
void append_16bit_wgmma_entries(std::vector<VariantEntry>& out) {
  constexpr WgmmaCta kOne = WgmmaCta::one_head;
  out.push_back(wgmma_entry<KOperand::bf16, VOperand::bf16, kD, kAblation, kOne, kRing>(TP_KV_K16V16, TP_KPATH_K16,
                                                                                        TP_MODE_NONE));
  out.push_back(wgmma_entry<KOperand::bf16, VOperand::fp8_convert, kD, kAblation, kOne, kRing>(
      TP_KV_K16V8, TP_KPATH_K16, TP_MODE_FULL));
  out.push_back(wgmma_entry<KOperand::fp8_mma, VOperand::bf16, kD, kAblation, kOne, kRing>(TP_KV_K8V16, TP_KPATH_FP8_QK,
                                                                                           TP_MODE_NONE));
  out.push_back(wgmma_entry<KOperand::fp8_convert, VOperand::bf16, kD, kAblation, kOne, kRing>(
      TP_KV_K8V16, TP_KPATH_TRANSFORM, TP_MODE_FULL));
}

}  // namespace tilepath::cuda::kernels
