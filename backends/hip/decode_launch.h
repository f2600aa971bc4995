#pragma once
// Host-side interface between the HIP plugin glue and the decode-attention kernels
// (kernels/*.hip). Plain types only, so that the glue compiles with the host compiler.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <hip/hip_runtime_api.h>

#include "backends/abi/tilepath_backend.h"

namespace tilepath::hip {

// An ablation changes one named stage of the main kernel (selected by template flag).
enum class AblationKind : int {
  none = 0,
  remove = 1,     // the stage's call is compiled out (its consumers read stale/zero data)
  twice = 2,      // the stage runs twice per tile
  load_only = 3,  // only k_load/v_load; every compute stage removed
};

struct Ablation {
  AblationKind kind = AblationKind::none;
  int stage = -1;  // enum tp_stage; ignored for none and load_only
};

// One decode step. All pointers are device pointers owned by the caller. FP8 tensors are
// E4M3 FNUZ (the plugin re-encodes the store's OCP cache at upload and doubles its
// scales: numerics::to_fnuz_cache).
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
  const void* k_pages = nullptr;             // [num_pages][page_size][kv_heads][head_dim] BF16 or E4M3 FNUZ
  const void* v_pages = nullptr;             // same layout
  const std::int32_t* page_table = nullptr;  // [batch][max_pages_per_seq]
  const std::int32_t* lengths = nullptr;     // [batch] tokens
  const float* k_scale = nullptr;            // [kv_heads] or [1], FNUZ scales
  const float* v_scale = nullptr;
  std::uint16_t* out = nullptr;  // [batch][q_heads][head_dim] BF16

  float* partial_out = nullptr;  // [splits][batch][q_heads][head_dim]
  float* partial_lse = nullptr;  // [splits][batch][q_heads], log2 domain
};

// One compiled variant of the main kernel: what it computes and how to find it in the
// embedded code object.
struct VariantInfo {
  int kv_dtype, k_path, mode, head_dim;
  AblationKind ablation;
  int ablated_stage;          // enum tp_stage, -1 for none / load_only
  std::string name;           // e.g. "decode_k8v8_fp8_qk_k_only_d128", "..._d128_remove_qk"
  std::string symbol_prefix;  // the Itanium-mangled kernel name up to its parameter list
  bool fp8_qk_mfma;           // QK runs on v_mfma_f32_16x16x32_fp8_fp8
  bool fp8_pv_mfma;           // PV runs on it too (mode k_only)
  bool bf16_mfma;             // some product runs on v_mfma_f32_16x16x16_bf16
  int target_waves_per_simd;  // the occupancy the kernel is built for (amdgpu_waves_per_eu)
  int lds_bytes;              // static LDS of the workgroup
  int threads;                // workgroup size
  int tile_tokens;            // KV tokens per pipeline step of one workgroup
};

// Every compiled main-kernel variant, and the split-KV combine kernels.
const std::vector<VariantInfo>& decode_variants();
// Itanium-mangled name prefix of the combine kernel for a head dim.
std::string combine_symbol_prefix(int head_dim);

// What was launched for the main kernel (for the case's metadata).
struct KernelInfo {
  const VariantInfo* variant = nullptr;
  int grid[3] = {0, 0, 0};
  int block[3] = {0, 0, 0};
};

// The variant for these arguments and ablation, or nullptr when none is compiled in.
const VariantInfo* find_variant(const DecodeArgs& args, const Ablation& ablation);

std::size_t decode_workspace_bytes(const DecodeArgs& args);

// The main kernel (q_quant in its prologue for fp8_qk), then combine when splits > 1.
hipError_t launch_decode(const DecodeArgs& args, const Ablation& ablation, hipStream_t stream, KernelInfo* info);

// Tokens per split, a multiple of 32 (one wave tile).
int split_tokens_for(int max_len, int splits);
// Split-KV count for small batch x long context: enough workgroups to fill cu_count CUs,
// every split holding tokens.
int choose_splits(int batch, int kv_heads, int head_chunks, int max_len, int cu_count);
// Query heads one workgroup holds (the n16 side of the MFMA tiles).
inline constexpr int kHeadsPerWorkgroup = 16;

}  // namespace tilepath::hip
