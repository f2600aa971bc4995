#pragma once
// The per-tile stages of the decode kernel, named as in the stage graph:
//   k_load -> k_prep -> qk -> [k_bias] -> softmax -> pv -> accum,   v_load -> v_prep -> pv.
// Each works on one warp's tile of 32 tokens. Fragment layouts (mma.sync):
//   QK  S(16 rows = query heads, 8 used; 32 tok)  = Q(16, D) · Kᵀ(D, 32 tok)   m16n8k16 bf16|f16 / m16n8k32 e4m3
//   PV  Oᵀ(D, 8 heads) += Vᵀ(D, 32 tok) · Pᵀ(32 tok, 8 heads)                  (swapped: heads are the n8 side)
// A 16-bit MMA is BF16 for an operand stored as BF16 and F16 for an E4M3 operand converted
// on chip (k_prep / v_prep): E4M3 -> F16 is one exact instruction per pair.
// The S accumulator's (row g, cols 2t,2t+1) pairs are exactly the Pᵀ B-fragment
// of PV, so P never leaves registers. Along each reduction (d for QK, tokens for
// PV) the element order inside a thread is permuted consistently on both operands,
// which lets every operand come from 16-byte shared-memory reads.
//
// Ablations: a removed stage keeps a cheap dependent use of its inputs (xor into
// `sink`) so the compiler cannot delete the loads and preparation feeding it; a
// doubled stage runs twice with the second run data-dependent on the first through
// `salt` (0 at run time, unknown to the compiler).

#include <cstdint>

#include "backends/cuda/bias_rotation_tables.h"
#include "backends/cuda/kernels/decode_traits.cuh"
#include "backends/cuda/kernels/device_primitives.cuh"

namespace tilepath::cuda::kernels {

inline constexpr float kLog2e = 1.4426950408889634f;
inline constexpr float kPFp8Scale = 256.0f;  // P in [0,1] is quantized as P*256 (exact power of two; < 448)

// Per-lane position inside the warp's MMA fragments.
struct Lane {
  int lane;
  int group;  // g = lane / 4: fragment row (QK: query head) / column (PV: query head)
  int quad;   // t = lane % 4: position inside the quad
};

// Query fragment of row g (one query head), already in the d-order QK reads K in.
template <class T>
struct QFragment {
  // 16-bit Q (BF16 against BF16 K, F16 against converted E4M3 K): per K chunk j, the K
  // chunk's elements of Q as 16-bit pairs. E4M3 Q: per K chunk j, 16 bytes = 4 words.
  static constexpr int kChunkGroups = T::kKConsumedChunks / 4;   // chunks a lane reads per K row
  static constexpr int kWordsPerChunk = T::kKPrepInMma ? 8 : 4;  // MMA operand words per 16-byte K chunk
  std::uint32_t w[kChunkGroups * kWordsPerChunk];
};

// Online-softmax state of one warp (row g) and its output accumulator.
template <class T>
struct WarpAccumulator {
  float m;                 // running max of row g, log2 units
  float l;                 // this lane's share of the row-g denominator
  float o[T::kMTiles][4];  // Oᵀ fragments: (16 d, 8 heads) per m-tile
};

// ============================================================================
// k_load / v_load: HBM -> shared ring (cp.async, 16-byte chunks, zero-filled past the end)
// ============================================================================

// A (32 tok, kChunks x 16 B) tile of one operand is kChunks 16-byte chunks per lane, its
// rows gathered through the page table: lane r holds the row index of token r (~0u past
// the end), broadcast by shuffle. Chunk `it` of a lane: where it comes from and goes to.
struct TileChunk {
  std::size_t src;    // byte offset in the page pool (0 when invalid)
  std::uint32_t dst;  // byte offset in the tile (swizzled)
  bool valid;         // token inside the split (else the chunk is zero-filled)
};

template <int kChunks>
__device__ __forceinline__ TileChunk tile_chunk(std::uint32_t my_row, int it, int lane) {
  const int idx = it * 32 + lane;
  const int row = idx / kChunks, chunk = idx % kChunks;
  const std::uint32_t r = __shfl_sync(0xffffffffu, my_row, row);
  TileChunk c;
  c.valid = r != ~0u;
  c.src = c.valid ? static_cast<std::size_t>(r) * (kChunks * 16) + chunk * 16 : 0;
  c.dst = row * (kChunks * 16) + swizzle_chunk<kChunks>(row, chunk) * 16;
  return c;
}

template <class T>
__device__ __forceinline__ void k_load(std::uint32_t k_tile, const DecodeArgs& a, const TileChunk& c) {
  cp_async_16(k_tile + c.dst, static_cast<const char*>(a.k_pages) + c.src, c.valid);  // one chunk of K
}
template <class T>
__device__ __forceinline__ void v_load(std::uint32_t v_tile, const DecodeArgs& a, const TileChunk& c) {
  cp_async_16(v_tile + c.dst, static_cast<const char*>(a.v_pages) + c.src, c.valid);  // one chunk of V
}

// K(32 tok, D) and V(32 tok, D) of one tile -> smem. When K and V rows have the same
// chunk count (K8/V8, K16/V16) a chunk's gather (shuffle, validity, offsets) serves both.
template <class T>
__device__ __forceinline__ void kv_tile_load(std::uint32_t k_tile, std::uint32_t v_tile, const DecodeArgs& a,
                                             std::uint32_t my_row, int lane) {
  if constexpr (T::kKChunks == T::kVChunks) {
#pragma unroll
    for (int it = 0; it < T::kKChunks; ++it) {
      const TileChunk c = tile_chunk<T::kKChunks>(my_row, it, lane);
      if constexpr (T::kLoadsK) k_load<T>(k_tile, a, c);
      if constexpr (T::kLoadsV) v_load<T>(v_tile, a, c);
    }
  } else {
    if constexpr (T::kLoadsK) {
#pragma unroll
      for (int it = 0; it < T::kKChunks; ++it) k_load<T>(k_tile, a, tile_chunk<T::kKChunks>(my_row, it, lane));
    }
    if constexpr (T::kLoadsV) {
#pragma unroll
      for (int it = 0; it < T::kVChunks; ++it) v_load<T>(v_tile, a, tile_chunk<T::kVChunks>(my_row, it, lane));
    }
  }
}

// ============================================================================
// k_prep: E4M3 K chunk -> F16 MMA operand words (transform path)
// ============================================================================

// 16 E4M3 (d0..d15) -> 8 f16x2 words; word 2s = (d4s, d4s+1), word 2s+1 = (d4s+2, d4s+3).
__device__ __forceinline__ void convert_chunk_e4m3_to_f16(const uint4& raw, std::uint32_t (&out)[8]) {
  const std::uint32_t in[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    out[2 * s] = e4m3x2_to_f16x2(in[s] & 0xFFFFu);
    out[2 * s + 1] = e4m3x2_to_f16x2(in[s] >> 16);
  }
}

// K' = f16(K8), exact  (scale stays in score space)
template <class T>
__device__ __forceinline__ void k_prep(const uint4& raw, std::uint32_t (&kf)[8], std::uint32_t salt) {
  constexpr int kStage = TP_STAGE_K_PREP;
  if constexpr (T::runs(kStage)) {
    convert_chunk_e4m3_to_f16(raw, kf);
    if constexpr (T::doubled(kStage)) {
      const uint4 again = {raw.x ^ ((kf[0] ^ kf[1]) & salt), raw.y ^ ((kf[2] ^ kf[3]) & salt),
                           raw.z ^ ((kf[4] ^ kf[5]) & salt), raw.w ^ ((kf[6] ^ kf[7]) & salt)};
      convert_chunk_e4m3_to_f16(again, kf);
    }
  } else {
    // removed: feed the raw bytes as if converted (loads stay live, values are garbage)
    kf[0] = kf[1] = raw.x;
    kf[2] = kf[3] = raw.y;
    kf[4] = kf[5] = raw.z;
    kf[6] = kf[7] = raw.w;
  }
}

// ============================================================================
// qk: S = Q·Kᵀ over the warp's 32 tokens (unscaled; scales are applied in softmax)
// ============================================================================

template <class T>
__device__ __forceinline__ void qk_mma_chunk(float (&s)[4], const std::uint32_t* q, const std::uint32_t* kf) {
  constexpr int kWords = QFragment<T>::kWordsPerChunk;
#pragma unroll
  for (int step = 0; step < kWords / 2; ++step) {
    // rows 8..15 of Q are padding (a1 = a3 = 0)
    if constexpr (T::kQFp8) {
      mma_e4m3_16832(s, q[2 * step], 0u, q[2 * step + 1], 0u, kf[2 * step], kf[2 * step + 1]);
    } else if constexpr (T::kQkF16) {
      mma_f16_16816(s, q[2 * step], 0u, q[2 * step + 1], 0u, kf[2 * step], kf[2 * step + 1]);
    } else {
      mma_bf16_16816(s, q[2 * step], 0u, q[2 * step + 1], 0u, kf[2 * step], kf[2 * step + 1]);
    }
  }
}

// S(16, 32 tok) = Q(16, D) · Kᵀ(D, 32 tok); K tile rows read as 16-byte chunks (row 8n+g, chunk 4j+t).
template <class T>
__device__ __forceinline__ void qk(float (&s)[T::kNTiles][4], const QFragment<T>& q, std::uint32_t k_tile,
                                   const Lane& ln, std::uint32_t& sink, std::uint32_t salt) {
  constexpr int kStage = TP_STAGE_QK;
  constexpr int kRowBytes = T::kKConsumedChunks * 16;
  constexpr int kWords = QFragment<T>::kWordsPerChunk;
#pragma unroll
  for (int n = 0; n < T::kNTiles; ++n) {
#pragma unroll
    for (int i = 0; i < 4; ++i) s[n][i] = 0.0f;
    const int row = 8 * n + ln.group;
#pragma unroll
    for (int j = 0; j < QFragment<T>::kChunkGroups; ++j) {
      const int chunk = 4 * j + ln.quad;
      const uint4 raw = lds_128(k_tile + row * kRowBytes + swizzle_chunk<T::kKConsumedChunks>(row, chunk) * 16);
      std::uint32_t kf[8];
      if constexpr (T::kKPrepInMma) {
        k_prep<T>(raw, kf, salt);
      } else {
        kf[0] = raw.x, kf[1] = raw.y, kf[2] = raw.z, kf[3] = raw.w;
      }
      const std::uint32_t* qw = &q.w[j * kWords];
      if constexpr (T::runs(kStage)) {
        qk_mma_chunk<T>(s[n], qw, kf);
        if constexpr (T::doubled(kStage)) qk_mma_chunk<T>(s[n], qw, kf);  // S accumulates twice; halved below
      } else {
#pragma unroll
        for (int w = 0; w < kWords; ++w) sink ^= kf[w] ^ qw[w];
      }
    }
    if constexpr (T::doubled(kStage)) {
#pragma unroll
      for (int i = 0; i < 4; ++i) s[n][i] *= 0.5f;
    }
  }
}

// ============================================================================
// k_bias (post-RoPE prebias K): S += q·RoPE_t(b) of the exact bias, in score space
// ============================================================================
// The derivation and the tables: backends/cuda/bias_rotation_tables.h. Per row the bias
// enters as (α_i, β_i) of each channel pair, set for the warp's first tile (an exact
// integer phase and one sincos per pair, make_bias_state); after each tile they turn by the
// fixed angle between the warp's tiles (four FMAs per pair against step_rotation's
// cos/sin, read through L1), and an F16 MMA of QK's shape against the fixed (D, 32 token)
// cos/sin table in shared memory adds Σ α_i cos(kθ_i) + β_i sin(kθ_i) to token t0 + k.
// α, β and the table are F16: 2^-12 of each term. With a bias spread over every channel that
// is under 2e-4 of Σ|q_d b_d| (tests/backends/test_cuda_bias_tables.cpp); with the bias of
// models/keys/qwen_bias.json on 4 channels the terms do not cancel and a score is off by up to
// 1e-3 of it, 0.3-0.6% of the output (bench/kbias_f16_effect.cpp), still well below the E4M3
// residual's own error. High and low F16 words remove it but double the stage's MMAs: prebias
// kernels 1.14-1.42x slower (bench/results/kbias-words/, which sketches a cheaper form).

template <class T>
struct BiasState {
  static constexpr int kSlots = T::kHeadDim / 8;  // channel pairs per lane (bias_pair_of)
  float alpha[kSlots], beta[kSlots];              // (α_i, β_i) of row g for the warp's current tile, times 2^sigma
  const float4* step;                             // this quad's step_rotation entries for the kernel's warp stride
  float to_s;                                     // S units per (α, β) unit: the QK accumulator's scale over 2^sigma
};

// (α, β) ← (α cos ψ + β sin ψ, β cos ψ − α sin ψ): the same pair one warp stride later.
__device__ __forceinline__ void turn_pair(float& alpha, float& beta, float cs, float sn) {
  const float a = alpha, b = beta;
  alpha = fmaf(a, cs, b * sn);
  beta = fmaf(b, cs, -a * sn);
}

// c(16 rows, 32 tok) += (α, β) · table for the warp's current tile, then (α, β) turned to its
// next tile. kStepFromTable false (the doubled ablation's second run): the turn is by an
// angle derived from salt (none at run time), with the same arithmetic but no table read.
template <class T, bool kStepFromTable>
__device__ __forceinline__ void bias_scores(float (&c)[T::kNTiles][4], BiasState<T>& bs, std::uint32_t table,
                                            const Lane& ln, std::uint32_t word_salt, float turn_salt) {
  constexpr int kGroups = T::kHeadDim / 32;  // two k-steps (four pair slots) per table uint4
  constexpr int kSlots = BiasState<T>::kSlots;
  std::uint32_t w[kSlots];
#pragma unroll
  for (int slot = 0; slot < kSlots; ++slot) w[slot] = pack_f16x2(bs.alpha[slot], bs.beta[slot]) ^ word_salt;
#pragma unroll
  for (int pair = 0; pair < kSlots / 2; ++pair) {  // slots 2·pair, 2·pair + 1: step_rotation entry `pair`
    float4 r;
    if constexpr (kStepFromTable) {
      r = ldg_nc_f32x4(bs.step + 4 * pair);  // per tile: held across the loop it costs 32 registers
    } else {
      r = make_float4(1.0f + turn_salt, turn_salt, 1.0f + turn_salt, turn_salt);
    }
    turn_pair(bs.alpha[2 * pair], bs.beta[2 * pair], r.x, r.y);
    turn_pair(bs.alpha[2 * pair + 1], bs.beta[2 * pair + 1], r.z, r.w);
  }
#pragma unroll
  for (int j = 0; j < kGroups; ++j) {
#pragma unroll
    for (int n = 0; n < T::kNTiles; ++n) {
      const uint4 e = lds_128(table + ((n * kGroups + j) * 32 + ln.lane) * 16);
      // rows 8..15 are padding (a1 = a3 = 0)
      mma_f16_16816(c[n], w[4 * j], 0u, w[4 * j + 1], 0u, e.x, e.y);
      mma_f16_16816(c[n], w[4 * j + 2], 0u, w[4 * j + 3], 0u, e.z, e.w);
    }
  }
}

// Called once per tile of the warp, in tile order: the state holds the current tile's (α, β).
template <class T>
__device__ __forceinline__ void k_bias(float (&s)[T::kNTiles][4], BiasState<T>& bs, std::uint32_t table, const Lane& ln,
                                       std::uint32_t& sink, std::uint32_t salt) {
  constexpr int kStage = TP_STAGE_K_BIAS;
  if constexpr (!T::runs(kStage)) {
#pragma unroll
    for (int i = 0; i < BiasState<T>::kSlots; ++i) sink ^= __float_as_uint(bs.alpha[i]) ^ __float_as_uint(bs.beta[i]);
  } else {
    float c[T::kNTiles][4] = {};
    bias_scores<T, true>(c, bs, table, ln, 0u, 0.0f);
    float weight = bs.to_s;
    if constexpr (T::doubled(kStage)) {
      // the second run's words and turn depend on the first's result (salt = 0 at run time)
      const std::uint32_t dep = __float_as_uint(c[0][0]) & salt;
      bias_scores<T, false>(c, bs, table, ln, dep, __uint_as_float(dep));
      weight *= 0.5f;
    }
#pragma unroll
    for (int n = 0; n < T::kNTiles; ++n) {
      s[n][0] = fmaf(c[n][0], weight, s[n][0]);  // rows g (8..15 are padding)
      s[n][1] = fmaf(c[n][1], weight, s[n][1]);
    }
  }
}

// ============================================================================
// softmax: online update of row g; P = 2^(S·c - m), packed as the PV B operand
// ============================================================================

// PV B-operand words: 16-bit PV uses pb[n] = (P[g][8n+2t], P[g][8n+2t+1]) for n = 0..3;
// FP8 PV uses pb[0] = E4M3x4 of tiles 0,1 and pb[1] = tiles 2,3 (P scaled by 256).
struct PFragment {
  std::uint32_t pb[4];
  float alpha_lo, alpha_hi;  // rescale of the Oᵀ columns this lane holds: heads 2t, 2t+1
  bool rescale;              // warp-uniform: some row's max moved, so O needs the alphas (lazy rescale)
};

// P as the 16-bit PV operand: the type V is multiplied in.
template <class T>
__device__ __forceinline__ std::uint32_t pack_p16(float lo, float hi) {
  if constexpr (T::kPvF16) {
    return pack_f16x2(lo, hi);
  } else {
    return pack_bf16x2(lo, hi);
  }
}

template <class T>
__device__ __forceinline__ void softmax_update(const float (&s)[T::kNTiles][4], float row_scale, int tile_first,
                                               int end, const Lane& ln, WarpAccumulator<T>& acc, PFragment& p) {
  float x[T::kNTiles][2];
  float tile_max = -INFINITY;
#pragma unroll
  for (int n = 0; n < T::kNTiles; ++n) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int token = tile_first + 8 * n + 2 * ln.quad + i;
      x[n][i] = token < end ? s[n][i] * row_scale : -INFINITY;
      tile_max = fmaxf(tile_max, x[n][i]);
    }
  }
  tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
  tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
  const float m_new = fmaxf(acc.m, tile_max);
  const float m_use = m_new == -INFINITY ? 0.0f : m_new;  // a fully masked row stays 0, not NaN
  const float alpha = fast_exp2(acc.m - m_use);
  float sum = 0.0f;
  float e[T::kNTiles][2];
#pragma unroll
  for (int n = 0; n < T::kNTiles; ++n) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      e[n][i] = fast_exp2(x[n][i] - m_use);
      sum += e[n][i];
    }
  }
  acc.l = acc.l * alpha + sum;
  // Once the running max settles, most tiles leave every row's max where it was: then
  // alpha = 1 exactly and accum skips O·alpha for the whole warp.
  p.rescale = __any_sync(0xffffffffu, m_new != acc.m);
  acc.m = m_new;
  if constexpr (T::kPFp8) {
    p.pb[0] = pack_e4m3x4(e[0][0] * kPFp8Scale, e[0][1] * kPFp8Scale, e[1][0] * kPFp8Scale, e[1][1] * kPFp8Scale);
    p.pb[1] = pack_e4m3x4(e[2][0] * kPFp8Scale, e[2][1] * kPFp8Scale, e[3][0] * kPFp8Scale, e[3][1] * kPFp8Scale);
    p.pb[2] = p.pb[3] = 0u;
  } else {
#pragma unroll
    for (int n = 0; n < T::kNTiles; ++n) p.pb[n] = pack_p16<T>(e[n][0], e[n][1]);
  }
  // Oᵀ column c belongs to head c: fetch alpha from the lanes whose row g is that head.
  p.alpha_lo = __shfl_sync(0xffffffffu, alpha, 8 * ln.quad);
  p.alpha_hi = __shfl_sync(0xffffffffu, alpha, 8 * ln.quad + 4);
}

// removed: P = S (no max, no exponent), alpha = 1.
template <class T>
__device__ __forceinline__ void softmax_bypass(const float (&s)[T::kNTiles][4], WarpAccumulator<T>& acc, PFragment& p) {
  float sum = 0.0f;
#pragma unroll
  for (int n = 0; n < T::kNTiles; ++n) sum += s[n][0] + s[n][1];
  acc.l += sum;
  if constexpr (T::kPFp8) {
    p.pb[0] = pack_e4m3x4(s[0][0], s[0][1], s[1][0], s[1][1]);
    p.pb[1] = pack_e4m3x4(s[2][0], s[2][1], s[3][0], s[3][1]);
    p.pb[2] = p.pb[3] = 0u;
  } else {
#pragma unroll
    for (int n = 0; n < T::kNTiles; ++n) p.pb[n] = pack_p16<T>(s[n][0], s[n][1]);
  }
  p.alpha_lo = p.alpha_hi = 1.0f;
  p.rescale = false;
}

// m' = max(m, max_t S·c);  P = 2^(S·c - m');  l' = l·2^(m-m') + ΣP
template <class T>
__device__ __forceinline__ void softmax(float (&s)[T::kNTiles][4], float row_scale, int tile_first, int end,
                                        const Lane& ln, WarpAccumulator<T>& acc, PFragment& p, float salt_f) {
  constexpr int kStage = TP_STAGE_SOFTMAX;
  if constexpr (!T::runs(kStage)) {
    softmax_bypass<T>(s, acc, p);
  } else if constexpr (T::doubled(kStage)) {
    WarpAccumulator<T> first = acc;
    softmax_update<T>(s, row_scale, tile_first, end, ln, first, p);
    // second run on S + salt·(first result): same values at run time, but it cannot be folded away
    const float dep = salt_f * (first.l + p.alpha_lo);
#pragma unroll
    for (int n = 0; n < T::kNTiles; ++n) s[n][0] += dep, s[n][1] += dep;
    softmax_update<T>(s, row_scale, tile_first, end, ln, acc, p);
  } else {
    softmax_update<T>(s, row_scale, tile_first, end, ln, acc, p);
  }
}

// ============================================================================
// v_prep + pv: Oᵀ_tile(16 d, 8 heads) = Vᵀ(16 d, 32 tok) · Pᵀ(32 tok, 8 heads), one m-tile at a time
// ============================================================================

// Vᵀ A-fragments of one m-tile for the two k16 steps (16-bit) or one k32 step (FP8, words 0..3).
struct VFragment {
  std::uint32_t a[8];
};

// Which d an Oᵀ fragment row holds. V read as 16-bit with ldmatrix.trans: row g <-> d 16m+g,
// row g+8 <-> 16m+8+g. V read as E4M3 (b16 pairs through ldmatrix.trans): row g <-> d 16m+2g,
// row g+8 <-> 16m+2g+1.
template <class T>
__device__ __forceinline__ int o_row_to_d(int m_tile, int group, int upper) {
  if constexpr (T::kVConsumedFp8) {
    return 16 * m_tile + 2 * group + upper;
  } else {
    return 16 * m_tile + 8 * upper + group;
  }
}

// Raw E4M3 read of m-tile m: four 8x8 b16 matrices = tokens 0-7, 8-15, 16-23, 24-31 of
// d-chunk m (16 d). Lane gets bytes (tok 2t, d 2g), (2t, 2g+1), (2t+1, 2g), (2t+1, 2g+1).
template <class T>
__device__ __forceinline__ void read_v_fp8(std::uint32_t v_tile, int m_tile, const Lane& ln, std::uint32_t (&r)[4]) {
  constexpr int kRowBytes = T::kVConsumedChunks * 16;
  const int row = ln.lane;
  ldmatrix_x4_trans(v_tile + row * kRowBytes + swizzle_chunk<T::kVConsumedChunks>(row, m_tile) * 16, r);
}

// 16-bit (BF16 or staged F16) read of m-tile m, k16 step u: matrices (tok 0-7 | 8-15) x (d 0-7 | 8-15) of the step.
template <class T>
__device__ __forceinline__ void read_v_16bit(std::uint32_t v_tile, int m_tile, int step, const Lane& ln,
                                             std::uint32_t (&r)[4]) {
  constexpr int kRowBytes = T::kVConsumedChunks * 16;
  const int row = 16 * step + ((ln.lane >> 4) << 3) + (ln.lane & 7);
  const int chunk = 2 * m_tile + ((ln.lane >> 3) & 1);
  ldmatrix_x4_trans(v_tile + row * kRowBytes + swizzle_chunk<T::kVConsumedChunks>(row, chunk) * 16, r);
}

__device__ __forceinline__ void v_convert(const std::uint32_t (&r)[4], VFragment& v) {
#pragma unroll
  for (int step = 0; step < 2; ++step) {
    // (tok 2t, 2t+1) at d 2g -> a0/a2;  at d 2g+1 -> a1/a3
    const std::uint32_t lo = byte_perm(r[2 * step], 0u, 0x3120), hi = byte_perm(r[2 * step + 1], 0u, 0x3120);
    v.a[4 * step + 0] = e4m3x2_to_f16x2(lo & 0xFFFFu);
    v.a[4 * step + 1] = e4m3x2_to_f16x2(lo >> 16);
    v.a[4 * step + 2] = e4m3x2_to_f16x2(hi & 0xFFFFu);
    v.a[4 * step + 3] = e4m3x2_to_f16x2(hi >> 16);
  }
}

__device__ __forceinline__ void v_transpose_fp8(const std::uint32_t (&r)[4], VFragment& v) {
  // k order (tok 2t, 2t+1, 8+2t, 9+2t | 16+2t, ...) matches the Pᵀ words of softmax
  v.a[0] = byte_perm(r[0], r[1], 0x6420);  // row g   = d 2g
  v.a[1] = byte_perm(r[0], r[1], 0x7531);  // row g+8 = d 2g+1
  v.a[2] = byte_perm(r[2], r[3], 0x6420);
  v.a[3] = byte_perm(r[2], r[3], 0x7531);
}

// V' = operand form of V: f16(V8) (full) or the E4M3 transpose (k_only); 16-bit V is read as is.
template <class T>
__device__ __forceinline__ void v_prep(std::uint32_t v_tile, int m_tile, const Lane& ln, VFragment& v,
                                       std::uint32_t salt) {
  constexpr int kStage = TP_STAGE_V_PREP;
  if constexpr (!T::kVConsumedFp8) {
#pragma unroll
    for (int step = 0; step < 2; ++step) {
      std::uint32_t r[4];
      read_v_16bit<T>(v_tile, m_tile, step, ln, r);
#pragma unroll
      for (int i = 0; i < 4; ++i) v.a[4 * step + i] = r[i];
    }
  } else {
    std::uint32_t r[4];
    read_v_fp8<T>(v_tile, m_tile, ln, r);
    if constexpr (!T::runs(kStage)) {
#pragma unroll
      for (int i = 0; i < 8; ++i) v.a[i] = r[i & 3];  // removed: raw bytes as the operand
    } else {
      if constexpr (T::kPFp8) {
        v_transpose_fp8(r, v);
      } else {
        v_convert(r, v);
      }
      if constexpr (T::doubled(kStage)) {
        std::uint32_t again[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) again[i] = r[i] ^ ((v.a[i] ^ v.a[i + 4]) & salt);
        if constexpr (T::kPFp8) {
          v_transpose_fp8(again, v);
        } else {
          v_convert(again, v);
        }
      }
    }
  }
}

template <class T>
__device__ __forceinline__ void pv_mma(float (&d)[4], const VFragment& v, const PFragment& p) {
  if constexpr (T::kPFp8) {
    mma_e4m3_16832(d, v.a[0], v.a[1], v.a[2], v.a[3], p.pb[0], p.pb[1]);
  } else if constexpr (T::kPvF16) {
    mma_f16_16816(d, v.a[0], v.a[1], v.a[2], v.a[3], p.pb[0], p.pb[1]);
    mma_f16_16816(d, v.a[4], v.a[5], v.a[6], v.a[7], p.pb[2], p.pb[3]);
  } else {
    mma_bf16_16816(d, v.a[0], v.a[1], v.a[2], v.a[3], p.pb[0], p.pb[1]);
    mma_bf16_16816(d, v.a[4], v.a[5], v.a[6], v.a[7], p.pb[2], p.pb[3]);
  }
}

// Oᵀ += Vᵀ·Pᵀ for one m-tile: into a zeroed tile accumulator that accum folds into O, or
// (lazy rescale) straight into O
template <class T>
__device__ __forceinline__ void pv(float (&o)[4], const VFragment& v, const PFragment& p, std::uint32_t& sink) {
  constexpr int kStage = TP_STAGE_PV;
  if constexpr (T::runs(kStage)) {
    if constexpr (T::doubled(kStage)) {
      float twice[4] = {o[0], o[1], o[2], o[3]};
      pv_mma<T>(twice, v, p);
      pv_mma<T>(o, v, p);
#pragma unroll
      for (int i = 0; i < 4; ++i) o[i] = 0.5f * (o[i] + twice[i]);
    } else {
      pv_mma<T>(o, v, p);
    }
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) sink ^= v.a[i];
    sink ^= p.pb[0] ^ p.pb[1] ^ p.pb[2] ^ p.pb[3];
  }
}

// ============================================================================
// accum: O ← O·2^(m-m') + PV
// ============================================================================

template <class T>
__device__ __forceinline__ void accum(float (&o)[4], const float (&d)[4], const PFragment& p) {
  o[0] = fmaf(o[0], p.alpha_lo, d[0]);  // c0: (row g,   head 2t)
  o[1] = fmaf(o[1], p.alpha_hi, d[1]);  // c1: (row g,   head 2t+1)
  o[2] = fmaf(o[2], p.alpha_lo, d[2]);  // c2: (row g+8, head 2t)
  o[3] = fmaf(o[3], p.alpha_hi, d[3]);  // c3: (row g+8, head 2t+1)
}

// Lazy rescale (T::kLazyRescale): O ← O·2^(m-m') ahead of the tile's PV, which then
// accumulates into O itself; skipped for the whole warp when no row's max moved.
template <class T>
__device__ __forceinline__ void accum(float (&o)[4], const PFragment& p) {
  o[0] *= p.alpha_lo;  // c0: (row g,   head 2t)
  o[1] *= p.alpha_hi;  // c1: (row g,   head 2t+1)
  o[2] *= p.alpha_lo;  // c2: (row g+8, head 2t)
  o[3] *= p.alpha_hi;  // c3: (row g+8, head 2t+1)
}

// ============================================================================
// separate_kv: converter-warp versions of k_prep / v_prep (raw ring -> staged F16 tile)
// ============================================================================

// One operand's (32 tok, D) raw tile -> staged tile in the MMA warps' format.
template <int kRawChunks, int kStagedChunks, bool kConvert, bool kRuns, bool kTwice>
__device__ __forceinline__ void stage_operand(std::uint32_t raw_tile, std::uint32_t staged_tile, int lane,
                                              std::uint32_t salt) {
#pragma unroll
  for (int it = 0; it < kRawChunks; ++it) {
    const int idx = it * 32 + lane;
    const int row = idx / kRawChunks, chunk = idx % kRawChunks;
    const uint4 raw = lds_128(raw_tile + row * (kRawChunks * 16) + swizzle_chunk<kRawChunks>(row, chunk) * 16);
    if constexpr (kConvert) {
      // one E4M3 chunk (16 d) becomes F16 chunks 2c, 2c+1
      std::uint32_t w[8];
      if constexpr (kRuns) {
        convert_chunk_e4m3_to_f16(raw, w);
        if constexpr (kTwice) {
          const uint4 again = {raw.x ^ ((w[0] ^ w[1]) & salt), raw.y ^ ((w[2] ^ w[3]) & salt),
                               raw.z ^ ((w[4] ^ w[5]) & salt), raw.w ^ ((w[6] ^ w[7]) & salt)};
          convert_chunk_e4m3_to_f16(again, w);
        }
      } else {
        w[0] = w[1] = raw.x, w[2] = w[3] = raw.y, w[4] = w[5] = raw.z, w[6] = w[7] = raw.w;
      }
      // staged chunk 2c holds d 16c..16c+7 in natural order: words (d0,1),(d2,3),(d4,5),(d6,7)
      const uint4 lo = {w[0], w[1], w[2], w[3]}, hi = {w[4], w[5], w[6], w[7]};
      // Eight consecutive lanes put their chunks 2c in four of a 128-byte line's eight bank
      // groups, twice each: ncu counts 2-way store conflicts (bench/results/ncu). Storing
      // half of them odd-first removes the conflicts but measured no faster for K8/V8 and
      // 4-6% slower for K16/V8 at B >= 16 (docs/perf-notes.md, "separate_kv"): the
      // converter warps limit this mode, and the selects cost them more than the conflicts.
      sts_128(staged_tile + row * (kStagedChunks * 16) + swizzle_chunk<kStagedChunks>(row, 2 * chunk) * 16, lo);
      sts_128(staged_tile + row * (kStagedChunks * 16) + swizzle_chunk<kStagedChunks>(row, 2 * chunk + 1) * 16, hi);
    } else {
      sts_128(staged_tile + row * (kStagedChunks * 16) + swizzle_chunk<kStagedChunks>(row, chunk) * 16, raw);
    }
  }
}

template <class T>
__device__ __forceinline__ void k_prep_staged(std::uint32_t raw_k, std::uint32_t staged_k, int lane,
                                              std::uint32_t salt) {
  constexpr int kStage = TP_STAGE_K_PREP;
  stage_operand<T::kKChunks, T::kKConsumedChunks, T::kK == KOperand::fp8_convert, T::runs(kStage), T::doubled(kStage)>(
      raw_k, staged_k, lane, salt);
}
template <class T>
__device__ __forceinline__ void v_prep_staged(std::uint32_t raw_v, std::uint32_t staged_v, int lane,
                                              std::uint32_t salt) {
  constexpr int kStage = TP_STAGE_V_PREP;
  stage_operand<T::kVChunks, T::kVConsumedChunks, T::kV == VOperand::fp8_convert, T::runs(kStage), T::doubled(kStage)>(
      raw_v, staged_v, lane, salt);
}

}  // namespace tilepath::cuda::kernels
