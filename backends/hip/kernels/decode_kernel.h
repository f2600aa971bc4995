#pragma once
// The HIP decode-attention kernel: one workgroup of 4 waves per (request, kv head, split,
// group of <= 16 query heads). Each wave walks its own 32-token tiles of the split
// (tile i of wave w starts at begin + 32·(i·4 + w)) with its own online softmax; the
// waves merge once at the end through LDS.
//
// Pipeline per wave: the next tile's K (into registers, the MFMA's A rows) and V (into
// registers, then the wave's LDS slot) are requested before the current tile is consumed,
// so one tile of loads is in flight behind every tile of compute; with the target of two
// waves per SIMD, two tiles per SIMD.

#include "backends/hip/kernels/decode_stages.h"

namespace tilepath::hip::kernels {

struct KernelParams {
  DecodeArgs args;
  int head_chunks;  // ceil(group / 16): workgroups sharing one kv head
  unsigned salt;    // always 0; keeps doubled-stage ablations from being folded
};

template <class T>
__device__ __forceinline__ WorkgroupWork workgroup_work(const KernelParams& p) {
  const DecodeArgs& a = p.args;
  WorkgroupWork w;
  w.split = static_cast<int>(__builtin_amdgcn_workgroup_id_x());
  const int y = static_cast<int>(__builtin_amdgcn_workgroup_id_y());
  w.kv_head = y / p.head_chunks;
  const int chunk = y % p.head_chunks;
  w.batch = static_cast<int>(__builtin_amdgcn_workgroup_id_z());
  const int group = a.q_heads / a.kv_heads;
  w.head0 = w.kv_head * group + chunk * T::kHeads;
  w.heads = group - chunk * T::kHeads < T::kHeads ? group - chunk * T::kHeads : T::kHeads;
  w.begin = w.split * a.split_tokens;
  const int len = a.lengths[w.batch];
  const int stop = len < w.begin + a.split_tokens ? len : w.begin + a.split_tokens;
  w.end = stop > w.begin ? stop : w.begin;
  return w;
}

// qk -> softmax -> (v_prep -> pv -> accum) per m-tile, on one tile already in registers
// (K) and in the wave's LDS slot (V).
template <class T>
__device__ __forceinline__ void consume_tile(const KRegs<T>& k, const char* v_slot, const QFragment<T>& q,
                                             float row_scale, int first, int end, const Lane& ln,
                                             WaveAccumulator<T>& acc, unsigned& sink, unsigned salt) {
  f32x4 s[T::kSubTiles];
  qk<T>(s, k, q, sink, salt);  // Sᵀ = K·Qᵀ  (k_prep inside for the transform path)
  PFragment p;
  softmax<T>(s, row_scale, first, end, ln, acc, p, as_float(salt));  // P = 2^(S·c - m)
#pragma unroll
  for (int m = 0; m < T::kMTiles; ++m) {
    VFragment<T> v;
    v_prep<T>(v_slot, m, ln, v, salt);  // V' = operand form of V
    f32x4 d = {0.0f, 0.0f, 0.0f, 0.0f};
    pv<T>(d, v, p, sink);         // Oᵀ_tile = V'ᵀ·Pᵀ
    accum(acc.o[m], d, p.alpha);  // O = O·α + Oᵀ_tile
  }
}

// Merge the waves' (m, l, O) through LDS, normalise, write the output or split partials.
template <class T>
__device__ __forceinline__ void merge_and_store(const KernelParams& p, const WorkgroupWork& w, char* lds, int wave,
                                                const Lane& ln, const WaveAccumulator<T>& acc) {
  const DecodeArgs& a = p.args;
  constexpr int kH = T::kHeads, kD = T::kHeadDim;
  float* merge_m = reinterpret_cast<float*>(lds);  // [waves][16]
  float* merge_l = merge_m + T::kWaves * kH;       // [waves][16]
  float* merge_o = merge_l + T::kWaves * kH;       // [16][D]
  workgroup_sync();                                // every wave is done with the V slots the merge reuses
  float l = acc.l;
  l += shfl_xor(l, 16);
  l += shfl_xor(l, 32);
  if (ln.g == 0) {
    merge_m[wave * kH + ln.c] = acc.m;
    merge_l[wave * kH + ln.c] = l;
  }
  workgroup_sync();
  float m_max = -__builtin_inff();
#pragma unroll
  for (int u = 0; u < T::kWaves; ++u) m_max = __builtin_fmaxf(m_max, merge_m[u * kH + ln.c]);
  const float weight = m_max == -__builtin_inff() ? 0.0f : fast_exp2(acc.m - m_max);  // empty wave: 2^-inf = 0
  // Wave by wave, in a fixed order, so the sum does not depend on timing.
#pragma unroll
  for (int u = 0; u < T::kWaves; ++u) {
    if (wave == u) {
#pragma unroll
      for (int m = 0; m < T::kMTiles; ++m) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          float& dst = merge_o[ln.c * kD + 16 * m + 4 * ln.g + i];
          dst = (u == 0 ? 0.0f : dst) + acc.o[m][i] * weight;
        }
      }
    }
    workgroup_sync();
  }
  const int v_head = a.scale_per_head ? w.kv_head : 0;
  const float v_scale = T::kV == VOperand::bf16 ? 1.0f : a.v_scale[v_head];
  const float out_scale = v_scale / (T::kPFp8 ? kPFnuzScale : 1.0f);  // V scale on the output
  for (int idx = thread_index(); idx < w.heads * kD; idx += T::kThreads) {
    const int h = idx / kD, d = idx % kD;
    float head_max = -__builtin_inff();
#pragma unroll
    for (int u = 0; u < T::kWaves; ++u) head_max = __builtin_fmaxf(head_max, merge_m[u * kH + h]);
    float l_sum = 0.0f;
    if (head_max != -__builtin_inff()) {
#pragma unroll
      for (int u = 0; u < T::kWaves; ++u) l_sum += merge_l[u * kH + h] * fast_exp2(merge_m[u * kH + h] - head_max);
    }
    const float value = l_sum > 0.0f ? merge_o[h * kD + d] / l_sum * out_scale : 0.0f;
    const long long row = static_cast<long long>(w.batch) * a.q_heads + w.head0 + h;
    if (a.splits == 1) {
      a.out[row * kD + d] = static_cast<std::uint16_t>(bf16_bits(value));
    } else {
      const long long part = static_cast<long long>(w.split) * a.batch * a.q_heads + row;
      a.partial_out[part * kD + d] = value;
      // log2-domain log-sum-exp of this split (-inf when it saw no token)
      if (d == 0) a.partial_lse[part] = l_sum > 0.0f ? head_max + fast_log2(l_sum) : -__builtin_inff();
    }
  }
}

template <int kKv, int kPath, int kMode, int kD, int kAbl, int kStage>
__global__ void __launch_bounds__(256) TP_WAVES_PER_EU(kD <= 128 ? 2 : 1)
    decode_attention_kernel(const KernelParams p) {
  using T = DecodeTraits<kKv, kPath, kMode, kD, kAbl, kStage>;
  static_assert(T::kThreads == 256, "launch bounds");
  static_assert(T::kTargetWavesPerSimd == (kD <= 128 ? 2 : 1), "waves_per_eu");
  __shared__ __attribute__((aligned(16))) char lds[T::kLdsBytes];
  const DecodeArgs& a = p.args;
  const int wave = thread_index() / kWaveSize;
  const Lane ln{lane_index(), lane_index() & 15, lane_index() >> 4};
  const WorkgroupWork w = workgroup_work<T>(p);

  WaveAccumulator<T> acc;
  acc.m = -__builtin_inff();
  acc.l = 0.0f;
#pragma unroll
  for (int m = 0; m < T::kMTiles; ++m) acc.o[m] = f32x4{0.0f, 0.0f, 0.0f, 0.0f};
  unsigned sink = 0;

  // q_quant (fp8_qk) or the BF16 Q fragment; the row scale holds every scale of the logit
  QFragment<T> q;
  const float q_scale = q_fragment<T>(a, w, ln, q);
  const float k_scale = T::kK == KOperand::bf16 ? 1.0f : a.k_scale[a.scale_per_head ? w.kv_head : 0];
  const float row_scale = a.softmax_scale * kLog2e * k_scale * q_scale;

  const int remaining = w.end - w.begin - T::kWaveTokens * wave;
  const int tiles = remaining > 0 ? (remaining + T::kWgTokens - 1) / T::kWgTokens : 0;
  char* v_slot = lds + wave * T::kVSlotBytes;
  const auto tile_first = [&](int i) { return w.begin + T::kWaveTokens * (i * T::kWaves + wave); };

  KRegs<T> k_cur{}, k_next{};  // zeroed once: the last iteration copies k_next unloaded
  VRegs<T> v_cur{}, v_next{};
  if (tiles > 0) {
    k_load<T>(a, w, tile_first(0), ln, k_cur);  // K (32 tok, D) -> registers
    v_load<T>(a, w, tile_first(0), ln, v_cur);  // V (32 tok, D) -> registers
  }
  for (int i = 0; i < tiles; ++i) {
    if (i + 1 < tiles) {
      k_load<T>(a, w, tile_first(i + 1), ln, k_next);
      v_load<T>(a, w, tile_first(i + 1), ln, v_next);
    }
    wave_lds_sync();  // the previous tile's v_prep reads are issued before the slot is rewritten
    v_store<T>(v_slot, ln, v_cur);
    wave_lds_sync();
    if constexpr (T::kLoadOnly) {
#pragma unroll
      for (int n = 0; n < T::kSubTiles; ++n) sink ^= k_cur.c[n][0][0];
    } else {
      consume_tile<T>(k_cur, v_slot, q, row_scale, tile_first(i), w.end, ln, acc, sink, p.salt);
    }
    k_cur = k_next;
    v_cur = v_next;
  }

  merge_and_store<T>(p, w, lds, wave, ln, acc);
  if (p.salt == 0xFFFFFFFFu && sink == 0x9E3779B9u) a.out[0] = 0;  // keeps removed stages' inputs live
}

}  // namespace tilepath::hip::kernels
