#pragma once
// The per-tile stages of the HIP decode kernel, named as in the stage graph:
//   k_load -> k_prep -> qk -> softmax -> pv -> accum,   v_load -> v_prep -> pv,
// plus q_quant once per step. Each works on one wave's tile of 32 tokens (two 16-token
// MFMA tiles). Lane l: c = l % 16, g = l / 16. Fragment layouts (16x16 MFMAs, wave64):
//   QK  Sᵀ(16 tok, 16 heads)  = K(16 tok, 32 d) · Qᵀ(32 d, 16 heads)   16x16x32 fp8 | 2 x 16x16x16 bf16
//       lane: K row tok c, d 32s+8g..+7 (8 bytes FP8 / 16 bytes BF16 straight from HBM);
//       Sᵀ lands as (tok 4g+i, head c): every logit of a lane belongs to head c, so the
//       row scale (softmax scale, K scale, Q scale) is one multiply per F32 logit.
//   PV  Oᵀ(16 d, 16 heads) += Vᵀ(16 d, k tok) · Pᵀ(k tok, 16 heads)
//       Pᵀ's B fragment (k 4g+i | 8g+j, head c) is exactly where softmax left P, so P never
//       leaves registers: BF16 PV takes one 16-token QK tile per k16 step; FP8 PV's k32 step
//       takes k = 8g+j <-> token 16·(j/4) + 4g + j%4 of both tiles, and V is gathered from
//       LDS in the same order (v_prep).
//
// Ablations: a removed stage keeps a cheap dependent use of its inputs (xor into `sink`)
// so the compiler cannot delete the loads feeding it; a doubled stage runs twice with the
// second run data-dependent on the first through `salt` (0 at run time, unknown to the
// compiler).

#include <cstdint>
#include <type_traits>

#include "backends/hip/kernels/decode_traits.h"

namespace tilepath::hip::kernels {

inline constexpr float kLog2e = 1.4426950408889634f;
inline constexpr float kPFnuzScale = 128.0f;  // numerics::kFnuzPScale: P in [0,1] enters FP8 PV as P*128

struct Lane {
  int lane;
  int c;  // l % 16: MFMA row of A / column of B and D
  int g;  // l / 16: k group of A and B, row group of D
};

// The workgroup's place in the problem.
struct WorkgroupWork {
  int batch, kv_head, split;
  int head0, heads;  // first query head and count (<= 16)
  int begin, end;    // token range [begin, end) of this split
};

// Row (in rows of one kv head) of a token of the request; -1 past the end of the split.
__device__ __forceinline__ long long cache_row(const DecodeArgs& a, const WorkgroupWork& w, int token) {
  if (token >= w.end) return -1;
  const int page = a.page_table[static_cast<long long>(w.batch) * a.max_pages_per_seq + token / a.page_size];
  return (static_cast<long long>(page) * a.page_size + token % a.page_size) * a.kv_heads + w.kv_head;
}

// ============================================================================
// Registers of one wave tile
// ============================================================================

template <class T>
struct KRegs {  // this lane's K: token c of each 16-token tile, d 32s+8g..+7
  using Chunk = std::conditional_t<T::kKBytes == 1, u32x2, u32x4>;
  Chunk c[T::kSubTiles][T::kDSteps];
};
template <class T>
struct VRegs {  // this lane's 16-byte chunks of the (32 tok, D) V tile, on their way to LDS
  u32x4 c[T::kVChunksPerLane];
};

template <class T>
struct QFragment {
  long q8[T::kDSteps];       // fp8_qk: FNUZ Q, d 32s+8g..+7
  i16x4 q16[T::kDSteps][2];  // BF16 Q: d 32s+8g..+3 and +4..+7
};

template <class T>
struct WaveAccumulator {
  float m;              // running max of head c, log2 units
  float l;              // this lane's share of head c's denominator
  f32x4 o[T::kMTiles];  // Oᵀ(d 16m+4g+i, head c)
};

struct PFragment {
  long p8;       // FP8 PV: FNUZ(P·128), k = 8g+j
  i16x4 p16[2];  // BF16 PV: BF16(P) of QK tile n, k = 4g+i
  float alpha;   // rescale of head c's O: 2^(m - m')
};

template <class T>
struct VFragment {
  long a8;       // FP8 PV: V(tok(8g+j), d 16m+c)
  i16x4 a16[2];  // BF16 PV: V(tok 16n+4g+i, d 16m+c)
};

// ============================================================================
// k_load / v_load: HBM -> registers (K) and HBM -> registers -> LDS (V)
// ============================================================================

// K(32 tok, D) of the tile starting at `first`: a lane reads its MFMA A rows directly.
template <class T>
__device__ __forceinline__ void k_load(const DecodeArgs& a, const WorkgroupWork& w, int first, const Lane& ln,
                                       KRegs<T>& k) {
  const char* base = static_cast<const char*>(a.k_pages);
#pragma unroll
  for (int n = 0; n < T::kSubTiles; ++n) {
    const long long row = cache_row(a, w, first + 16 * n + ln.c);
#pragma unroll
    for (int s = 0; s < T::kDSteps; ++s) {
      using Chunk = typename KRegs<T>::Chunk;
      const long long offset = (row * T::kHeadDim + 32 * s + 8 * ln.g) * T::kKBytes;
      k.c[n][s] = row >= 0 ? *reinterpret_cast<const Chunk*>(base + offset) : Chunk{};  // zero past the end
    }
  }
}

// V(32 tok, D) of the tile: 16-byte chunks, row r = token first + r.
template <class T>
__device__ __forceinline__ void v_load(const DecodeArgs& a, const WorkgroupWork& w, int first, const Lane& ln,
                                       VRegs<T>& v) {
  const char* base = static_cast<const char*>(a.v_pages);
#pragma unroll
  for (int it = 0; it < T::kVChunksPerLane; ++it) {
    const int idx = it * kWaveSize + ln.lane;
    const int r = idx / T::kVRowChunks, chunk = idx % T::kVRowChunks;
    const long long row = cache_row(a, w, first + r);
    // zero past the end: 0 x V must stay 0 (an FNUZ 0x80 would be NaN)
    v.c[it] = row >= 0 ? *reinterpret_cast<const u32x4*>(base + row * T::kVRowBytes + chunk * 16) : u32x4{};
  }
}

// The V tile into the wave's LDS slot, row-major (32 tok, D).
template <class T>
__device__ __forceinline__ void v_store(char* slot, const Lane& ln, const VRegs<T>& v) {
#pragma unroll
  for (int it = 0; it < T::kVChunksPerLane; ++it) {
    const int idx = it * kWaveSize + ln.lane;
    const int r = idx / T::kVRowChunks, chunk = idx % T::kVRowChunks;
    *reinterpret_cast<u32x4*>(slot + r * T::kVRowBytes + chunk * 16) = v.c[it];
  }
}

// ============================================================================
// q_quant (fp8_qk) and the BF16 Q fragment, once per step
// ============================================================================

// q8 = FNUZ(q / s), s = amax|q| / 240 per query head (numerics::quantize_q_row_e4m3_fnuz):
// the 4 lanes c, c+16, c+32, c+48 hold one row, so two shuffles give its amax. Returns s.
template <class T>
__device__ __forceinline__ float q_quant(const u32x4 (&raw)[T::kDSteps], QFragment<T>& q) {
  constexpr int kStage = TP_STAGE_Q_QUANT;
  float x[T::kDSteps][8];
  float amax = 0.0f;
#pragma unroll
  for (int s = 0; s < T::kDSteps; ++s) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      x[s][2 * k] = as_float(raw[s][k] << 16);  // bf16 -> f32, exact
      x[s][2 * k + 1] = as_float(raw[s][k] & 0xFFFF0000u);
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) amax = __builtin_fmaxf(amax, __builtin_fabsf(x[s][e]));
  }
  amax = __builtin_fmaxf(amax, shfl_xor(amax, 16));
  amax = __builtin_fmaxf(amax, shfl_xor(amax, 32));
  const float scale = amax > 0.0f ? amax / kFnuzMax : 1.0f;
#pragma unroll
  for (int s = 0; s < T::kDSteps; ++s) {
    if constexpr (T::runs(kStage)) {
      // IEEE division (correctly rounded), as the host reference divides
      const unsigned lo = float4_to_fnuz(x[s][0] / scale, x[s][1] / scale, x[s][2] / scale, x[s][3] / scale);
      const unsigned hi = float4_to_fnuz(x[s][4] / scale, x[s][5] / scale, x[s][6] / scale, x[s][7] / scale);
      q.q8[s] = words_to_fp8x8(lo, hi);
    } else {
      q.q8[s] = words_to_fp8x8(raw[s][0] ^ raw[s][1], raw[s][2] ^ raw[s][3]);  // removed: raw bits
    }
  }
  return scale;
}

// A lane's part of Q row head0 + c (zeros for a padding row), as the MFMA B operand;
// returns the Q scale that goes into the row scale (1 for BF16 Q).
template <class T>
__device__ __forceinline__ float q_fragment(const DecodeArgs& a, const WorkgroupWork& w, const Lane& ln,
                                            QFragment<T>& q) {
  const bool live = ln.c < w.heads;
  const std::uint16_t* row =
      a.q + (static_cast<long long>(w.batch) * a.q_heads + w.head0 + (live ? ln.c : 0)) * T::kHeadDim;
  u32x4 raw[T::kDSteps];
#pragma unroll
  for (int s = 0; s < T::kDSteps; ++s)
    raw[s] = live ? *reinterpret_cast<const u32x4*>(row + 32 * s + 8 * ln.g) : u32x4{};
  if constexpr (T::kQFp8) {
    return q_quant<T>(raw, q);
  } else {
#pragma unroll
    for (int s = 0; s < T::kDSteps; ++s) {
      q.q16[s][0] = words_to_bf16x4(raw[s][0], raw[s][1]);
      q.q16[s][1] = words_to_bf16x4(raw[s][2], raw[s][3]);
    }
    return 1.0f;
  }
}

// ============================================================================
// k_prep: FNUZ K -> BF16 MFMA operand (transform path), in registers
// ============================================================================

// K' = bf16(K8), exact  (the scale stays in score space)
template <class T>
__device__ __forceinline__ void k_prep(const u32x2& raw, i16x4 (&k16)[2], unsigned salt) {
  constexpr int kStage = TP_STAGE_K_PREP;
  if constexpr (T::runs(kStage)) {
    k16[0] = fnuz4_to_bf16x4(raw[0]);
    k16[1] = fnuz4_to_bf16x4(raw[1]);
    if constexpr (T::doubled(kStage)) {
      const u32x2 dep = __builtin_bit_cast(u32x2, k16[0]) ^ __builtin_bit_cast(u32x2, k16[1]);
      k16[0] = fnuz4_to_bf16x4(raw[0] ^ (dep[0] & salt));
      k16[1] = fnuz4_to_bf16x4(raw[1] ^ (dep[1] & salt));
    }
  } else {
    // removed: the raw bytes as if converted (loads stay live, values are garbage)
    k16[0] = k16[1] = words_to_bf16x4(raw[0], raw[1]);
  }
}

// ============================================================================
// qk: Sᵀ = K·Qᵀ over the wave's 32 tokens (unscaled; the scales are applied in softmax)
// ============================================================================

template <class T>
__device__ __forceinline__ f32x4 qk_mfma(const typename KRegs<T>::Chunk& kc, const QFragment<T>& q, int s, f32x4 acc,
                                         unsigned salt) {
  if constexpr (T::kK == KOperand::fp8_mma) {
    return mfma_fp8(__builtin_bit_cast(long, kc), q.q8[s], acc);  // FP8 x FP8 -> F32
  } else {
    i16x4 k16[2];
    if constexpr (T::kK == KOperand::fp8_convert) {
      k_prep<T>(kc, k16, salt);
    } else {
      k16[0] = words_to_bf16x4(kc[0], kc[1]);
      k16[1] = words_to_bf16x4(kc[2], kc[3]);
    }
    acc = mfma_bf16(k16[0], q.q16[s][0], acc);
    return mfma_bf16(k16[1], q.q16[s][1], acc);
  }
}

template <class T>
__device__ __forceinline__ void qk(f32x4 (&s_tiles)[T::kSubTiles], const KRegs<T>& k, const QFragment<T>& q,
                                   unsigned& sink, unsigned salt) {
  constexpr int kStage = TP_STAGE_QK;
#pragma unroll
  for (int n = 0; n < T::kSubTiles; ++n) {
    f32x4 acc = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int s = 0; s < T::kDSteps; ++s) {
      if constexpr (T::runs(kStage)) {
        acc = qk_mfma<T>(k.c[n][s], q, s, acc, salt);
        if constexpr (T::doubled(kStage)) acc = qk_mfma<T>(k.c[n][s], q, s, acc, salt);  // halved below
      } else {
        sink ^= k.c[n][s][0] ^ static_cast<unsigned>(q.q8[s]) ^ __builtin_bit_cast(u32x2, q.q16[s][0])[0];
      }
    }
    if constexpr (T::doubled(kStage)) acc *= 0.5f;
    s_tiles[n] = acc;
  }
}

// ============================================================================
// softmax: online update of head c; P = 2^(S·c - m), packed as the PV B operand
// ============================================================================

template <class T>
__device__ __forceinline__ void pack_p(const float (&e)[T::kSubTiles][4], PFragment& p) {
  if constexpr (T::kPFp8) {
    const unsigned lo =
        float4_to_fnuz(e[0][0] * kPFnuzScale, e[0][1] * kPFnuzScale, e[0][2] * kPFnuzScale, e[0][3] * kPFnuzScale);
    const unsigned hi =
        float4_to_fnuz(e[1][0] * kPFnuzScale, e[1][1] * kPFnuzScale, e[1][2] * kPFnuzScale, e[1][3] * kPFnuzScale);
    p.p8 = words_to_fp8x8(lo, hi);
  } else {
#pragma unroll
    for (int n = 0; n < T::kSubTiles; ++n) {
      p.p16[n] = i16x4{static_cast<short>(bf16_bits(e[n][0])), static_cast<short>(bf16_bits(e[n][1])),
                       static_cast<short>(bf16_bits(e[n][2])), static_cast<short>(bf16_bits(e[n][3]))};
    }
  }
}

template <class T>
__device__ __forceinline__ void softmax_update(const f32x4 (&s)[T::kSubTiles], float row_scale, int first, int end,
                                               const Lane& ln, WaveAccumulator<T>& acc, PFragment& p) {
  float x[T::kSubTiles][4];
  float tile_max = -__builtin_inff();
#pragma unroll
  for (int n = 0; n < T::kSubTiles; ++n) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int token = first + 16 * n + 4 * ln.g + i;
      x[n][i] = token < end ? s[n][i] * row_scale : -__builtin_inff();  // K scale: one multiply per logit
      tile_max = __builtin_fmaxf(tile_max, x[n][i]);
    }
  }
  tile_max = __builtin_fmaxf(tile_max, shfl_xor(tile_max, 16));  // the 4 lanes of head c
  tile_max = __builtin_fmaxf(tile_max, shfl_xor(tile_max, 32));
  const float m_new = __builtin_fmaxf(acc.m, tile_max);
  const float m_use = m_new == -__builtin_inff() ? 0.0f : m_new;  // a fully masked row stays 0, not NaN
  float e[T::kSubTiles][4];
  float sum = 0.0f;
#pragma unroll
  for (int n = 0; n < T::kSubTiles; ++n) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      e[n][i] = fast_exp2(x[n][i] - m_use);
      sum += e[n][i];
    }
  }
  p.alpha = fast_exp2(acc.m - m_use);
  acc.l = acc.l * p.alpha + sum;
  acc.m = m_new;
  pack_p<T>(e, p);
}

// removed: P = S (no max, no exponent), alpha = 1.
template <class T>
__device__ __forceinline__ void softmax_bypass(const f32x4 (&s)[T::kSubTiles], WaveAccumulator<T>& acc, PFragment& p) {
  float e[T::kSubTiles][4];
#pragma unroll
  for (int n = 0; n < T::kSubTiles; ++n) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      e[n][i] = s[n][i];
      acc.l += e[n][i];
    }
  }
  pack_p<T>(e, p);
  p.alpha = 1.0f;
}

// m' = max(m, max_t S·c);  P = 2^(S·c - m');  l' = l·2^(m-m') + ΣP
template <class T>
__device__ __forceinline__ void softmax(f32x4 (&s)[T::kSubTiles], float row_scale, int first, int end, const Lane& ln,
                                        WaveAccumulator<T>& acc, PFragment& p, float salt_f) {
  constexpr int kStage = TP_STAGE_SOFTMAX;
  if constexpr (!T::runs(kStage)) {
    softmax_bypass<T>(s, acc, p);
  } else if constexpr (T::doubled(kStage)) {
    WaveAccumulator<T> first_run = acc;
    softmax_update<T>(s, row_scale, first, end, ln, first_run, p);
    const float dep = salt_f * (first_run.l + p.alpha);  // 0 at run time, not to the compiler
#pragma unroll
    for (int n = 0; n < T::kSubTiles; ++n) s[n] += dep;
    softmax_update<T>(s, row_scale, first, end, ln, acc, p);
  } else {
    softmax_update<T>(s, row_scale, first, end, ln, acc, p);
  }
}

// ============================================================================
// v_prep + pv + accum, one m-tile (16 d) at a time
// ============================================================================

// FP8 PV: V(tok(8g+j), d) for j = 0..7, tok(k) = 16·(j/4) + 4g + j%4 (the order of P).
template <class T>
__device__ __forceinline__ long gather_v_fp8(const char* slot, int d, int g) {
  const unsigned char* v = reinterpret_cast<const unsigned char*>(slot);
  unsigned w[2] = {0u, 0u};
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int token = 16 * (j / 4) + 4 * g + j % 4;
    w[j / 4] |= static_cast<unsigned>(v[token * T::kVRowBytes + d]) << (8 * (j % 4));
  }
  return words_to_fp8x8(w[0], w[1]);
}

// FNUZ V of tile n, tokens 16n+4g..+3 at d, as one word.
template <class T>
__device__ __forceinline__ unsigned gather_v_fnuz4(const char* slot, int n, int d, int g) {
  const unsigned char* v = reinterpret_cast<const unsigned char*>(slot);
  unsigned w = 0u;
#pragma unroll
  for (int i = 0; i < 4; ++i) w |= static_cast<unsigned>(v[(16 * n + 4 * g + i) * T::kVRowBytes + d]) << (8 * i);
  return w;
}

// V' = operand form of V: the FNUZ gather (k_only), bf16(V8) (full), or BF16 V as is.
template <class T>
__device__ __forceinline__ void v_prep(const char* slot, int m_tile, const Lane& ln, VFragment<T>& v, unsigned salt) {
  constexpr int kStage = TP_STAGE_V_PREP;
  const int d = 16 * m_tile + ln.c;
  if constexpr (T::kV == VOperand::bf16) {
    const std::uint16_t* v16 = reinterpret_cast<const std::uint16_t*>(slot);
#pragma unroll
    for (int n = 0; n < T::kSubTiles; ++n) {
      const int t0 = 16 * n + 4 * ln.g;
      v.a16[n] = i16x4{
          static_cast<short>(v16[(t0 + 0) * T::kHeadDim + d]), static_cast<short>(v16[(t0 + 1) * T::kHeadDim + d]),
          static_cast<short>(v16[(t0 + 2) * T::kHeadDim + d]), static_cast<short>(v16[(t0 + 3) * T::kHeadDim + d])};
    }
  } else if constexpr (!T::runs(kStage)) {
    // removed: one contiguous read of the slot as the operand, a different one per m-tile
    // (identical operands would let the compiler merge the m-tiles' MFMAs)
    const u32x2 raw = *reinterpret_cast<const u32x2*>(slot + (4 * ln.g) * T::kVRowBytes + 16 * m_tile);
    v.a8 = __builtin_bit_cast(long, raw);
    v.a16[0] = v.a16[1] = words_to_bf16x4(raw[0], raw[1]);
  } else if constexpr (T::kV == VOperand::fp8_mma) {
    v.a8 = gather_v_fp8<T>(slot, d, ln.g);
    if constexpr (T::doubled(kStage)) {
      const int again = d ^ static_cast<int>(static_cast<unsigned>(v.a8) & salt);
      v.a8 = gather_v_fp8<T>(slot, again, ln.g);
    }
  } else {
#pragma unroll
    for (int n = 0; n < T::kSubTiles; ++n) {
      unsigned w = gather_v_fnuz4<T>(slot, n, d, ln.g);
      v.a16[n] = fnuz4_to_bf16x4(w);
      if constexpr (T::doubled(kStage)) {
        w ^= __builtin_bit_cast(u32x2, v.a16[n])[0] & salt;
        v.a16[n] = fnuz4_to_bf16x4(w);
      }
    }
  }
}

template <class T>
__device__ __forceinline__ f32x4 pv_mfma(const VFragment<T>& v, const PFragment& p, f32x4 d) {
  if constexpr (T::kPFp8) {
    return mfma_fp8(v.a8, p.p8, d);  // FP8 x FP8 -> F32
  } else {
    d = mfma_bf16(v.a16[0], p.p16[0], d);
    return mfma_bf16(v.a16[1], p.p16[1], d);
  }
}

// Oᵀ_tile(16 d, 16 heads) = V'ᵀ·Pᵀ into a zeroed tile accumulator that accum folds into O
template <class T>
__device__ __forceinline__ void pv(f32x4& d, const VFragment<T>& v, const PFragment& p, unsigned& sink) {
  constexpr int kStage = TP_STAGE_PV;
  if constexpr (T::runs(kStage)) {
    if constexpr (T::doubled(kStage)) {
      const f32x4 once = pv_mfma<T>(v, p, d);
      d = 0.5f * (pv_mfma<T>(v, p, once) - d);  // twice the tile, halved: the same values
    } else {
      d = pv_mfma<T>(v, p, d);
    }
  } else {
    sink ^= static_cast<unsigned>(v.a8) ^ __builtin_bit_cast(u32x2, v.a16[0])[0] ^
            __builtin_bit_cast(u32x2, v.a16[1])[1] ^ static_cast<unsigned>(p.p8) ^
            __builtin_bit_cast(u32x2, p.p16[0])[0] ^ __builtin_bit_cast(u32x2, p.p16[1])[1];
  }
}

// O ← O·2^(m-m') + PV
__device__ __forceinline__ void accum(f32x4& o, const f32x4& d, float alpha) { o = o * alpha + d; }

}  // namespace tilepath::hip::kernels
