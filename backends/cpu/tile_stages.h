#pragma once
// The per-tile stages of CPU decode attention, named as in the stage graph
// (k_load -> k_prep -> qk -> k_bias -> softmax -> pv -> accum, v_load -> v_prep -> pv).
// One work item = one (request, kv head, split): it owns all GQA q heads of its kv
// head, like a GPU CTA, and walks its tiles of kTileTokens tokens with online softmax.
//
// Shapes in comments: G = q heads per kv head, D = head dim, T = kTileTokens.

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/numerics/decode_problem.h"
#include "core/numerics/fp8.h"
#include "core/numerics/fp8_fnuz.h"
#include "core/numerics/rope.h"

namespace tilepath::cpu {

inline constexpr int kTileTokens = 64;

// How K reaches qk and V reaches pv for this variant.
enum class KOperand {
  bf16,            // K16: qk reads BF16 directly (no k_prep)
  e4m3_transform,  // transform: k_prep converts E4M3 -> float with scale (and bias; mxfp8: block scales)
  e4m3_fp8_qk,     // fp8_qk: qk multiplies E4M3 Q by E4M3 K; scales applied to the scores
                   // (mxfp8: each 32-element block's dot times its block scale)
};
enum class VOperand {
  bf16,          // V16: pv reads BF16 directly (no v_prep)
  e4m3_convert,  // full / separate_kv: v_prep converts E4M3 -> float with scale (mxfp8: block scales)
  e4m3_direct,   // k_only: pv multiplies E4M3-quantized P by E4M3 V; v_scale applied in accum
                 // (mxfp8: pv applies each element's block scale as it reads V)
};

// Everything a work item needs that is fixed for the whole decode step.
struct VariantPlan {
  KOperand k = KOperand::bf16;
  VOperand v = VOperand::bf16;
  bool staged_kv = false;  // separate_kv: K and V both prepared before the QK/PV pipeline
  // k_repr mxfp8: K (and an FP8 V) carry one E8M0 scale per 32 elements along head_dim
  // (DecodeProblem::k_mx_scales / v_mx_scales); k_load / v_load gather them with the tile.
  bool k_block_scaled = false, v_block_scaled = false;
  int head_dim = 0, group_size = 0, kv_heads = 0, page_size = 0, max_pages_per_seq = 0;
  float softmax_scale = 0;
  const numerics::DecodeProblem* problem = nullptr;
  const numerics::RopeTable* rope = nullptr;  // pre_rope: k_prep rotates each reconstructed key
  // post_rope prebias: the cache holds K_t - RoPE_t(b), so k_bias adds the score-space
  // correction q.RoPE_t(b) to every tile (both K paths).
  const numerics::RopeTable* bias_rope = nullptr;
  // gfx942 numerics (the cpu backend's device 1): FP8 bytes are E4M3 FNUZ (the cache as
  // numerics::to_fnuz_cache re-encodes it, scales doubled), Q quantized to FNUZ at amax/240
  // and k_only's P as FNUZ(P * p_scale) with p_scale = numerics::kFnuzPScale, as the HIP
  // kernels do. Plain K only (no MXFP8, no pre-RoPE or prebias cache).
  bool fnuz = false;
  float p_scale = numerics::kE4M3Max;  // kPScale; kFnuzPScale with fnuz
};

// rope: the kernel's cos/sin cache, required for a pre_rope op and for a post_rope prebias op.
VariantPlan make_variant_plan(const numerics::DecodeProblem& p, const numerics::RopeTable* rope = nullptr);

// E4M3 code -> float, exact (the CPU's stand-in for cvt.e4m3x2 -> f16x2).
const std::array<float, 256>& e4m3_table();
// E4M3 FNUZ code -> float, exact (numerics::e4m3_fnuz_to_float; 0x80 is NaN).
const std::array<float, 256>& e4m3_fnuz_table();
// E8M0 code -> 2^(code - 127) as a float, exact (numerics::e8m0_to_float; 0xFF is NaN).
const std::array<float, 256>& e8m0_table();
// The stages decode with vectorizable bit arithmetic; true when it equals the table for
// every non-NaN code (checked once by init, which fails loudly otherwise).
bool e4m3_fast_decode_matches_table();

// P is scaled into E4M3's range before quantization (p <= 1 after the running max),
// and the factor folded into the output scale: P8 = e4m3(p * kPScale), O *= v_scale / kPScale.
inline constexpr float kPScale = numerics::kE4M3Max;

// The tile a work item is on: tokens [first_token, first_token + tokens) of one request.
struct TileRef {
  const std::int32_t* page_row = nullptr;  // this request's page_table row
  int first_token = 0;
  int tokens = 0;  // 1..T
  int kv_head = 0;
};

// One work item's working set (a CTA's registers and shared memory on a GPU).
struct TileScratch {
  std::vector<std::uint8_t> k_raw, v_raw;  // (T, D) storage bytes as gathered
  std::vector<float> k_tile, v_tile;       // (T, D) prepared operands
  std::vector<float> row;                  // (D) one operand row decoded on the fly
  std::vector<float> q;                    // (G, D) Q as qk consumes it
  std::vector<float> score_scale;          // (G) multiplies q.k
  std::vector<float> bias_scale;           // (G) prebias: multiplies q.b_t (fp8_qk: q8.b_t, times q_scale)
  std::vector<float> scores, probs;        // (G, T)
  std::vector<float> p8;                   // (G, T) E4M3-quantized P (k_only)
  std::vector<float> m, l, alpha;          // (G) running max, running sum, rescale factor
  std::vector<float> tile_out, acc;        // (G, D)
  float out_scale = 1;                     // applied to tile_out in accum

  // (T, D/32) E8M0 block scales as gathered with k_raw / v_raw (mxfp8)
  std::vector<std::uint8_t> k_mx_raw, v_mx_raw;

  void resize(int group_size, int head_dim);
};

// ---- stage functions (one line of math each) ----

// k_raw[t] = K[page_row[(first+t)/P]][(first+t)%P][kv_head]      (T, D) gather (mxfp8: + (T, D/32) scales)
void k_load(const VariantPlan& plan, const TileRef& tile, TileScratch& s);
// k_tile = e4m3 * k_scale (pre-RoPE prebias: + k_bias), then RoPE_t for a pre-RoPE cache  (T, D)
//          (mxfp8: e4m3 * 2^X_block, then RoPE_t for a pre-RoPE cache)
void k_prep(const VariantPlan& plan, const TileRef& tile, TileScratch& s);
// S = Q·Kᵀ·score_scale (fp8_qk mxfp8: S = Σ_blocks 2^X_b·(Q8_b·K8_bᵀ)·score_scale)  (G, T)
void qk(const VariantPlan& plan, const TileRef& tile, TileScratch& s);
// S += Q·RoPE_t(b)ᵀ·bias_scale, the exact bias of a post-RoPE prebias cache           (G, T)
void k_bias(const VariantPlan& plan, const TileRef& tile, TileScratch& s);
// m' = max(m, rowmax S); alpha = exp(m - m'); P = exp(S - m'); l = l·alpha + rowsum P
void softmax(const VariantPlan& plan, const TileRef& tile, TileScratch& s);
// v_raw[t] = V[page][slot][kv_head]                               (T, D) gather (mxfp8: + (T, D/32) scales)
void v_load(const VariantPlan& plan, const TileRef& tile, TileScratch& s);
// v_tile = e4m3 * v_scale   (mxfp8: e4m3 * 2^X_block)              (T, D)
void v_prep(const VariantPlan& plan, const TileRef& tile, TileScratch& s);
// O_tile = P·V   (k_only: e4m3(P·kPScale)·V8; mxfp8: ·2^X_block per V element)  (G, D)
void pv(const VariantPlan& plan, const TileRef& tile, TileScratch& s);
// acc = acc·alpha + O_tile·out_scale                               (G, D)
void accum(const VariantPlan& plan, const TileRef& tile, TileScratch& s);

}  // namespace tilepath::cpu
