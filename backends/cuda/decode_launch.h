#pragma once
// Host-side interface between the CUDA plugin glue (plugin.cpp, harness) and the
// decode-attention kernels (kernels/*.cu). Plain types only so that .cpp files
// that include it compile with the host compiler.

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "backends/abi/tilepath_backend.h"
#include "core/perf/cuda_kernel_plan.h"

namespace tilepath::cuda {

// Values of DecodeArgs::mma (enum tp_mma of the plugin ABI).
inline constexpr int kMmaSync = 0;   // mma.sync: HMMA (E4M3 operands lowered to F16 HMMA + F2FP)
inline constexpr int kMmaWgmma = 1;  // wgmma.mma_async: HGMMA / QGMMA

// Tokens of a wgmma kernel's TMA box: a page (8, 16 or 32 tokens) or 32 tokens of a longer
// page. The page sizes the boxes tile: perf::cuda_plan::wgmma_tma_tiles_pages.
constexpr int wgmma_box_tokens(int page_size) { return page_size < 32 ? page_size : 32; }
using perf::cuda_plan::wgmma_tma_tiles_pages;

// An ablation changes one named stage of the main kernel (selected by template flag).
enum class AblationKind : int {
  none = 0,
  remove = 1,        // the stage's call is compiled out (its consumers read stale/zero data)
  twice = 2,         // the stage runs twice per tile
  load_only = 3,     // only k_load/v_load (+ ring bookkeeping); every compute stage removed
  isolate = 4,       // only the stage runs: a compute stage over tiles resident in shared memory
                     // (nothing loaded), k_load / v_load as the only loads, combine alone
  compute_only = 5,  // every per-tile compute stage over tiles resident in shared memory, nothing
                     // loaded and no wait for the ring: the compute side measured whole (wgmma)
};

struct Ablation {
  AblationKind kind = AblationKind::none;
  int stage = -1;  // enum tp_stage; ignored for none, load_only and compute_only
};

// One decode step. All pointers are device pointers owned by the caller.
struct DecodeArgs {
  int batch = 0, q_heads = 0, kv_heads = 0, head_dim = 0, page_size = 0;
  int max_pages_per_seq = 0;
  int kv_dtype = TP_KV_K8V8;        // enum tp_kv_dtype
  int k_path = TP_KPATH_TRANSFORM;  // enum tp_k_path
  int mode = TP_MODE_FULL;          // enum tp_transform_mode
  int splits = 1;                   // >= 1; 1 = no combine kernel
  int split_tokens = 0;             // tokens per split, a multiple of 32: split_tokens_for(max length, splits)
  int scale_per_head = 1;           // 0: k_scale[0]/v_scale[0] apply to all heads
  float softmax_scale = 0;          // 1/sqrt(head_dim)

  const std::uint16_t* q = nullptr;          // [batch][q_heads][head_dim] BF16
  const void* k_pages = nullptr;             // [num_pages][page_size][kv_heads][head_dim] BF16 or E4M3
  const void* v_pages = nullptr;             // same layout
  const std::int32_t* page_table = nullptr;  // [batch][max_pages_per_seq]
  const std::int32_t* lengths = nullptr;     // [batch] tokens
  const float* k_scale = nullptr;            // [kv_heads] or [1]
  const float* v_scale = nullptr;
  std::uint16_t* out = nullptr;  // [batch][q_heads][head_dim] BF16, 4-byte aligned

  // workspaces (sized by decode_workspace_bytes)
  float* partial_out = nullptr;  // [splits][batch][q_heads][head_dim], 8-byte aligned
  float* partial_lse = nullptr;  // [splits][batch][q_heads]

  // Last, so that adding them moved no field the plain kernels read.
  int k_repr = TP_KREPR_PLAIN;  // enum tp_k_repr: plain or (post-RoPE) prebias
  // prebias only (bias_rotation_tables.h): the cache holds K_t - RoPE_t(b)
  const float* k_bias = nullptr;                   // [kv_heads][head_dim] b, exact
  const std::uint32_t* bias_phase_step = nullptr;  // [head_dim / 2]
  const std::uint32_t* bias_table = nullptr;       // [head_dim * 16] F16 cos/sin fragments, 16-byte aligned
  const float* bias_step_rotation = nullptr;       // [kBiasMaxWarpStride][head_dim] per-tile turns, 16-byte aligned

  // The matrix instruction family (enum tp_mma): mma.sync kernels, or the wgmma kernels
  // (kernels/decode_wgmma.cuh), whose TMA tensor maps span the whole page pool.
  int mma = kMmaSync;
  int num_pages = 0;  // pages in k_pages / v_pages
};

// A compiled kernel's occupancy and registers.
struct KernelResources {
  int ctas_per_sm = 0;
  int regs_per_thread = 0;
};

// What was launched for the main kernel (for the case's metadata).
struct KernelInfo {
  const char* name = "";       // e.g. "decode_k8v8_transform_full_d128"
  const void* func = nullptr;  // for cudaFuncGetAttributes / occupancy
  dim3 grid, block;
  dim3 cluster{1, 1, 1};  // thread-block cluster dims (1, 1, 1: none)
  std::size_t smem_dynamic_bytes = 0;
  int tile_tokens = 0;  // KV tokens per pipeline tile
};

// True if a kernel for this (dtype, path, mode, head_dim, ablation) is compiled in.
bool decode_variant_available(const DecodeArgs& args, const Ablation& ablation);

// Workspace bytes needed (partial outputs for splits).
std::size_t decode_workspace_bytes(const DecodeArgs& args);

// cudaErrorInvalidValue where args cannot be launched as they are (a shape out of range, a
// missing or misaligned buffer), else cudaSuccess; touches no device. launch_decode checks it
// first.
cudaError_t check_decode_args(const DecodeArgs& args);

// Launch the whole step on stream: the main kernel (q_quant fused into its prologue for
// fp8_qk), then combine (splits > 1).
// Returns the first CUDA error (launch errors included). Fills *info when non-null.
cudaError_t launch_decode(const DecodeArgs& args, const Ablation& ablation, cudaStream_t stream, KernelInfo* info);

// Tokens per split: split s covers [s·t, (s+1)·t) of every request (a shorter one
// leaves its last splits empty). Known before any length is read, so the kernel's
// first page-table reads need not wait for one. Multiple of 32 (a warp tile).
int split_tokens_for(int max_len, int splits);

// Kv heads one CTA of the main kernel covers for these arguments (1 or 2), where it measured
// faster: on mma.sync two for K8/V8 at D=128 (not separate_kv) once a CTA's token range
// (split_tokens) reaches 4096; on wgmma two for K8/V8 at D=64 on a split grid (splits > 1;
// TILEPATH_CUDA_WGMMA_KV_HEADS_PER_CTA=1 or 2 overrides it for A/B runs).
int kv_heads_per_cta_for(const DecodeArgs& args);

// The main kernel a launch with these arguments runs (its kv heads per CTA follow from
// args.splits and args.split_tokens: one head for a decode_shape_args(op, 1) shape): the CTAs
// one SM holds at once, as the runtime computes it, and its registers
// (cudaErrorNotSupported when no such kernel is compiled in).
cudaError_t main_kernel_resources(const DecodeArgs& args, KernelResources* out);

// Split-KV count: enough CTAs to fill sm_count SMs at the main kernel's own occupancy
// (core/perf/cuda_kernel_plan.h, choose_splits).
int choose_splits(const DecodeArgs& args, int max_len, int sm_count);

}  // namespace tilepath::cuda
