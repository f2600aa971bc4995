// The named per-tile stages of the CPU decode kernel. Inner loops run over the
// contiguous head dimension so the compiler vectorizes them (omp simd, no OpenMP runtime).
#include "backends/cpu/tile_stages.h"

#include "core/numerics/fp8_inline.h"
#include "core/numerics/mxfp8.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

namespace tilepath::cpu {

using numerics::DecodeProblem;

namespace {

inline float bf16_bits_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

inline float dot(const float* a, const float* b, int n) {
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// Gather one tile of head rows (T, row_elems) of `bytes_per_elem` from a paged tensor laid
// out [page][slot][kv_head][row_elems]: the cache itself (row_elems = D) or its MXFP8 block
// scales (row_elems = D/32).
void gather_rows(const VariantPlan& plan, const TileRef& tile, const std::uint8_t* cache, std::size_t bytes_per_elem,
                 int row_elems, std::uint8_t* dst) {
  const std::size_t row_bytes = static_cast<std::size_t>(row_elems) * bytes_per_elem;
  for (int t = 0; t < tile.tokens; ++t) {
    const int token = tile.first_token + t;
    const std::size_t page = static_cast<std::size_t>(tile.page_row[token / plan.page_size]);
    const std::size_t slot = static_cast<std::size_t>(token % plan.page_size);
    const std::size_t element = ((page * plan.page_size + slot) * plan.kv_heads + tile.kv_head) * row_elems;
    std::memcpy(dst + t * row_bytes, cache + element * bytes_per_elem, row_bytes);
  }
}

// One raw operand row -> float, unscaled (BF16 widening or E4M3 table lookup).
inline void decode_row_bf16(const std::uint8_t* raw, int n, float* out) {
  const auto* bits = reinterpret_cast<const std::uint16_t*>(raw);
#pragma omp simd
  for (int i = 0; i < n; ++i) out[i] = bf16_bits_to_float(bits[i]);
}
// E4M3 -> float with integer ops the compiler vectorizes (a table lookup does not):
// normal codes move their exponent/mantissa into place and rebias (e - 7 + 127 = e + 120);
// subnormal codes are m * 2^-9. Caches never hold NaN codes (the encoder saturates), so
// 0x7F is not special-cased here. Exact for every other code (tested against the table).
inline float e4m3_value(std::uint32_t code) {
  const std::uint32_t sign = (code & 0x80u) << 24;
  const std::uint32_t magnitude = code & 0x7Fu;
  const std::uint32_t normal = (magnitude << 20) + (120u << 23);
  const std::uint32_t subnormal =
      std::bit_cast<std::uint32_t>(static_cast<float>(static_cast<int>(magnitude)) * 0x1p-9f);
  const std::uint32_t normal_mask = 0u - static_cast<std::uint32_t>(magnitude >= 8);  // all ones for normal codes
  return std::bit_cast<float>((normal & normal_mask) | (subnormal & ~normal_mask) | sign);
}

inline void decode_row_e4m3(const std::uint8_t* raw, int n, float* out) {
#pragma omp simd
  for (int i = 0; i < n; ++i) out[i] = e4m3_value(raw[i]);
}

// One FP8 row -> float in the plan's format: OCP E4M3 (the vectorized bit decode) or, for
// gfx942 numerics, E4M3 FNUZ (its exhaustively tested table).
inline void decode_row_fp8(const VariantPlan& plan, const std::uint8_t* raw, int n, float* out) {
  if (!plan.fnuz) return decode_row_e4m3(raw, n, out);
  const auto& table = e4m3_fnuz_table();
  for (int i = 0; i < n; ++i) out[i] = table[raw[i]];
}

// One MXFP8 row -> float: each element times its 32-element block's 2^X. Exact: an E4M3
// value (4 significant bits) times a power of two stays a float (down to 2^-136 for
// the smallest code and scale, inside float's subnormals), so it equals mxfp8_value.
inline void decode_row_mxfp8(const std::uint8_t* raw, const std::uint8_t* block_scales, int n, float* out) {
  const auto& e8m0 = e8m0_table();
  for (int block = 0; block < n / numerics::kMxBlockSize; ++block) {
    const float scale = e8m0[block_scales[block]];
    const std::uint8_t* r = raw + block * numerics::kMxBlockSize;
    float* o = out + block * numerics::kMxBlockSize;
#pragma omp simd
    for (int i = 0; i < numerics::kMxBlockSize; ++i) o[i] = e4m3_value(r[i]) * scale;
  }
}

float head_scale(const std::vector<float>& scales, int kv_head) { return scales[scales.size() > 1 ? kv_head : 0]; }

}  // namespace

VariantPlan make_variant_plan(const DecodeProblem& p, const numerics::RopeTable* rope) {
  VariantPlan plan;
  const auto& op = p.op;
  const bool rotates_keys = op.rope == RopeLayout::pre_rope && !p.k8.empty();
  const bool rotates_bias = op.rope == RopeLayout::post_rope && !p.k_bias.empty();
  if ((rotates_keys || rotates_bias) && rope == nullptr)
    throw std::invalid_argument("cpu kernel: a " + std::string(rotates_keys ? "pre_rope" : "post_rope prebias") +
                                " cache needs the kernel's RoPE table");
  if (rotates_keys) plan.rope = rope;
  if (rotates_bias) plan.bias_rope = rope;
  plan.k_block_scaled = !p.k_mx_scales.empty();
  plan.v_block_scaled = !p.v_mx_scales.empty();
  if ((plan.k_block_scaled && p.k_mx_scales.size() * numerics::kMxBlockSize != p.k8.size()) ||
      (plan.v_block_scaled && p.v_mx_scales.size() * numerics::kMxBlockSize != p.v8.size()))
    throw std::invalid_argument("cpu kernel: an MXFP8 cache needs one block scale per 32 FP8 elements");
  if (!p.k8.empty()) plan.k = op.k_path == KPath::fp8_qk ? KOperand::e4m3_fp8_qk : KOperand::e4m3_transform;
  if (!p.v8.empty()) plan.v = op.mode == TransformMode::k_only ? VOperand::e4m3_direct : VOperand::e4m3_convert;
  plan.staged_kv = op.mode == TransformMode::separate_kv;
  plan.head_dim = op.head_dim;
  plan.group_size = op.gqa_ratio();
  plan.kv_heads = op.kv_heads;
  plan.page_size = op.page_size;
  plan.max_pages_per_seq = p.max_pages_per_seq;
  plan.softmax_scale = p.softmax_scale;
  plan.problem = &p;
  return plan;
}

bool e4m3_fast_decode_matches_table() {
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7F) == 0x7F) continue;
    if (std::bit_cast<std::uint32_t>(e4m3_value(code)) != std::bit_cast<std::uint32_t>(e4m3_table()[code]))
      return false;
  }
  return true;
}

const std::array<float, 256>& e8m0_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int code = 0; code < 256; ++code) t[code] = numerics::e8m0_to_float(static_cast<std::uint8_t>(code));
    return t;
  }();
  return table;
}

const std::array<float, 256>& e4m3_fnuz_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int code = 0; code < 256; ++code) t[code] = numerics::e4m3_fnuz_to_float(static_cast<std::uint8_t>(code));
    return t;
  }();
  return table;
}

const std::array<float, 256>& e4m3_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int code = 0; code < 256; ++code) t[code] = numerics::e4m3_to_float(static_cast<std::uint8_t>(code));
    return t;
  }();
  return table;
}

void TileScratch::resize(int group_size, int head_dim) {
  const std::size_t tile_elems = static_cast<std::size_t>(kTileTokens) * head_dim;
  k_raw.assign(tile_elems * 2, 0);
  v_raw.assign(tile_elems * 2, 0);
  k_mx_raw.assign(tile_elems / numerics::kMxBlockSize, 0);
  v_mx_raw.assign(tile_elems / numerics::kMxBlockSize, 0);
  k_tile.assign(tile_elems, 0.0f);
  v_tile.assign(tile_elems, 0.0f);
  row.assign(head_dim, 0.0f);
  q.assign(static_cast<std::size_t>(group_size) * head_dim, 0.0f);
  score_scale.assign(group_size, 0.0f);
  bias_scale.assign(group_size, 0.0f);
  scores.assign(static_cast<std::size_t>(group_size) * kTileTokens, 0.0f);
  probs.assign(scores.size(), 0.0f);
  p8.assign(scores.size(), 0.0f);
  m.assign(group_size, -INFINITY);
  l.assign(group_size, 0.0f);
  alpha.assign(group_size, 0.0f);
  tile_out.assign(q.size(), 0.0f);
  acc.assign(q.size(), 0.0f);
}

// ---------------------------------------------------------------- k_load
void k_load(const VariantPlan& plan, const TileRef& tile, TileScratch& s) {
  const DecodeProblem& p = *plan.problem;
  if (plan.k == KOperand::bf16) {
    gather_rows(plan, tile, reinterpret_cast<const std::uint8_t*>(p.k16.data()), 2, plan.head_dim, s.k_raw.data());
  } else {
    gather_rows(plan, tile, p.k8.data(), 1, plan.head_dim, s.k_raw.data());
  }
  if (plan.k_block_scaled)
    gather_rows(plan, tile, p.k_mx_scales.data(), 1, plan.head_dim / numerics::kMxBlockSize, s.k_mx_raw.data());
}

// ---------------------------------------------------------------- k_prep
void k_prep(const VariantPlan& plan, const TileRef& tile, TileScratch& s) {
  if (plan.k != KOperand::e4m3_transform) return;  // BF16 K and fp8_qk need no conversion
  const DecodeProblem& p = *plan.problem;
  const int D = plan.head_dim;
  const float scale = head_scale(p.k_scale, tile.kv_head);
  const std::uint8_t* raw = s.k_raw.data();
  float* k = s.k_tile.data();
  if (plan.k_block_scaled) {
    // MXFP8: K = e4m3 * 2^X of the element's 32-element block (no bias: k_repr is one field).
    const int blocks = D / numerics::kMxBlockSize;
    for (int t = 0; t < tile.tokens; ++t) decode_row_mxfp8(&raw[t * D], &s.k_mx_raw[t * blocks], D, &k[t * D]);
  } else if (plan.fnuz) {
    decode_row_fp8(plan, raw, tile.tokens * D, k);
    for (int i = 0; i < tile.tokens * D; ++i) k[i] *= scale;
  } else if (p.k_bias.empty() || plan.rope == nullptr) {
    // (a post-RoPE prebias cache gets its bias back in score space, in k_bias)
#pragma omp simd
    for (int i = 0; i < tile.tokens * D; ++i) k[i] = e4m3_value(raw[i]) * scale;
  } else {
    // Pre-RoPE prebias: K = b + scale * e4m3, the exact bias restored before the rotation.
    const float* b = &p.k_bias[static_cast<std::size_t>(tile.kv_head) * D];
    for (int t = 0; t < tile.tokens; ++t) {
#pragma omp simd
      for (int d = 0; d < D; ++d) k[t * D + d] = b[d] + e4m3_value(raw[t * D + d]) * scale;
    }
  }
  if (plan.rope != nullptr) {
    // Pre-RoPE cache: rotate the reconstructed key (bias included) at its position.
    for (int t = 0; t < tile.tokens; ++t) plan.rope->rotate(&k[t * D], tile.first_token + t);
  }
}

// ---------------------------------------------------------------- qk
void qk(const VariantPlan& plan, const TileRef& tile, TileScratch& s) {
  const int D = plan.head_dim, G = plan.group_size;
  for (int t = 0; t < tile.tokens; ++t) {
    const float* key = nullptr;
    switch (plan.k) {
      case KOperand::e4m3_transform:
        key = &s.k_tile[static_cast<std::size_t>(t) * D];
        break;
      case KOperand::bf16:
        decode_row_bf16(&s.k_raw[static_cast<std::size_t>(t) * D * 2], D, s.row.data());
        key = s.row.data();
        break;
      case KOperand::e4m3_fp8_qk:
        decode_row_fp8(plan, &s.k_raw[static_cast<std::size_t>(t) * D], D, s.row.data());
        key = s.row.data();
        break;
    }
    if (plan.k == KOperand::e4m3_fp8_qk && plan.k_block_scaled) {
      // MXFP8 K: the block-scaled MMA's sum, per 32-element block the E4M3 dot times 2^X_b.
      const auto& e8m0 = e8m0_table();
      const std::uint8_t* block_scales = &s.k_mx_raw[static_cast<std::size_t>(t) * (D / numerics::kMxBlockSize)];
      for (int g = 0; g < G; ++g) {
        const float* q = &s.q[static_cast<std::size_t>(g) * D];
        float sum = 0;
        for (int block = 0; block < D / numerics::kMxBlockSize; ++block) {
          const int first = block * numerics::kMxBlockSize;
          sum += dot(q + first, key + first, numerics::kMxBlockSize) * e8m0[block_scales[block]];
        }
        s.scores[g * kTileTokens + t] = sum * s.score_scale[g];
      }
      continue;
    }
    for (int g = 0; g < G; ++g)
      s.scores[g * kTileTokens + t] = dot(&s.q[static_cast<std::size_t>(g) * D], key, D) * s.score_scale[g];
  }
}

// ---------------------------------------------------------------- k_bias
void k_bias(const VariantPlan& plan, const TileRef& tile, TileScratch& s) {
  if (plan.bias_rope == nullptr) return;  // no post-RoPE prebias cache
  // The bias never enters the K operand: its score q.RoPE_t(b) is added to S with the Q
  // that qk used (fp8_qk: the dequantized E4M3 Q).
  const int D = plan.head_dim, G = plan.group_size;
  const float* bias = &plan.problem->k_bias[static_cast<std::size_t>(tile.kv_head) * D];
  for (int t = 0; t < tile.tokens; ++t) {
    std::copy_n(bias, D, s.row.data());
    plan.bias_rope->rotate(s.row.data(), tile.first_token + t);
    for (int g = 0; g < G; ++g)
      s.scores[g * kTileTokens + t] += dot(&s.q[static_cast<std::size_t>(g) * D], s.row.data(), D) * s.bias_scale[g];
  }
}

// ---------------------------------------------------------------- softmax
void softmax(const VariantPlan& plan, const TileRef& tile, TileScratch& s) {
  for (int g = 0; g < plan.group_size; ++g) {
    const float* scores = &s.scores[g * kTileTokens];
    float* probs = &s.probs[g * kTileTokens];
    float running_max = s.m[g];
    for (int t = 0; t < tile.tokens; ++t) running_max = std::max(running_max, scores[t]);
    float row_sum = 0;
    for (int t = 0; t < tile.tokens; ++t) {
      probs[t] = std::exp(scores[t] - running_max);
      row_sum += probs[t];
    }
    s.alpha[g] = std::exp(s.m[g] - running_max);  // 0 on the first tile (m = -inf)
    s.l[g] = s.l[g] * s.alpha[g] + row_sum;
    s.m[g] = running_max;
  }
}

// ---------------------------------------------------------------- v_load
void v_load(const VariantPlan& plan, const TileRef& tile, TileScratch& s) {
  const DecodeProblem& p = *plan.problem;
  if (plan.v == VOperand::bf16) {
    gather_rows(plan, tile, reinterpret_cast<const std::uint8_t*>(p.v16.data()), 2, plan.head_dim, s.v_raw.data());
  } else {
    gather_rows(plan, tile, p.v8.data(), 1, plan.head_dim, s.v_raw.data());
  }
  if (plan.v_block_scaled)
    gather_rows(plan, tile, p.v_mx_scales.data(), 1, plan.head_dim / numerics::kMxBlockSize, s.v_mx_raw.data());
}

// ---------------------------------------------------------------- v_prep
void v_prep(const VariantPlan& plan, const TileRef& tile, TileScratch& s) {
  if (plan.v != VOperand::e4m3_convert) return;  // BF16 V and k_only's FP8 V are consumed as stored
  const std::uint8_t* raw = s.v_raw.data();
  float* v = s.v_tile.data();
  if (plan.v_block_scaled) {
    // MXFP8: V = e4m3 * 2^X of the element's 32-element block.
    const int D = plan.head_dim, blocks = D / numerics::kMxBlockSize;
    for (int t = 0; t < tile.tokens; ++t) decode_row_mxfp8(&raw[t * D], &s.v_mx_raw[t * blocks], D, &v[t * D]);
    return;
  }
  const float scale = head_scale(plan.problem->v_scale, tile.kv_head);
  if (plan.fnuz) {
    decode_row_fp8(plan, raw, tile.tokens * plan.head_dim, v);
    for (int i = 0; i < tile.tokens * plan.head_dim; ++i) v[i] *= scale;
    return;
  }
#pragma omp simd
  for (int i = 0; i < tile.tokens * plan.head_dim; ++i) v[i] = e4m3_value(raw[i]) * scale;
}

// ---------------------------------------------------------------- pv
void pv(const VariantPlan& plan, const TileRef& tile, TileScratch& s) {
  const int D = plan.head_dim, G = plan.group_size;
  std::fill(s.tile_out.begin(), s.tile_out.end(), 0.0f);
  const float* weights = s.probs.data();
  if (plan.v == VOperand::e4m3_direct) {
    // P8 = e4m3(P * p_scale): the FP8 PV operand; the factor returns in accum's out_scale.
    const auto& fnuz = e4m3_fnuz_table();
    for (int g = 0; g < G; ++g) {
      for (int t = 0; t < tile.tokens; ++t) {
        const float scaled = s.probs[g * kTileTokens + t] * plan.p_scale;
        s.p8[g * kTileTokens + t] = plan.fnuz ? fnuz[numerics::float_to_e4m3_fnuz(scaled)]
                                              : e4m3_value(numerics::inline_codec::float_to_e4m3(scaled));
      }
    }
    weights = s.p8.data();
  }
  for (int t = 0; t < tile.tokens; ++t) {
    const float* value = nullptr;
    switch (plan.v) {
      case VOperand::e4m3_convert:
        value = &s.v_tile[static_cast<std::size_t>(t) * D];
        break;
      case VOperand::bf16:
        decode_row_bf16(&s.v_raw[static_cast<std::size_t>(t) * D * 2], D, s.row.data());
        value = s.row.data();
        break;
      case VOperand::e4m3_direct:
        if (plan.v_block_scaled) {
          // MXFP8 V's blocks run along head_dim, not along PV's contraction (tokens), so no
          // block-scaled MMA can take them as operand scales: each element is scaled by its
          // 2^X as it is read (exact), and accum's out_scale keeps only 1/kPScale.
          decode_row_mxfp8(&s.v_raw[static_cast<std::size_t>(t) * D],
                           &s.v_mx_raw[static_cast<std::size_t>(t) * (D / numerics::kMxBlockSize)], D, s.row.data());
        } else {
          decode_row_fp8(plan, &s.v_raw[static_cast<std::size_t>(t) * D], D, s.row.data());
        }
        value = s.row.data();
        break;
    }
    for (int g = 0; g < G; ++g) {
      const float weight = weights[g * kTileTokens + t];
      float* out = &s.tile_out[static_cast<std::size_t>(g) * D];
#pragma omp simd
      for (int d = 0; d < D; ++d) out[d] += weight * value[d];
    }
  }
}

// ---------------------------------------------------------------- accum
void accum(const VariantPlan& plan, const TileRef&, TileScratch& s) {
  const int D = plan.head_dim;
  for (int g = 0; g < plan.group_size; ++g) {
    const float alpha = s.alpha[g], scale = s.out_scale;
    float* acc = &s.acc[static_cast<std::size_t>(g) * D];
    const float* tile_out = &s.tile_out[static_cast<std::size_t>(g) * D];
#pragma omp simd
    for (int d = 0; d < D; ++d) acc[d] = acc[d] * alpha + tile_out[d] * scale;
  }
}

}  // namespace tilepath::cpu
