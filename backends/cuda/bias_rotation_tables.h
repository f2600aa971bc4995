#pragma once
// The two constant tables of the CUDA kernels' k_bias stage (kernels/decode_stages.cuh),
// built on the host in float64. A post-RoPE prebias cache stores K_t - RoPE_t(b); the
// exact bias's score is
//   q·RoPE_t(b) = Σ_i A_i cos(tθ_i) + B_i sin(tθ_i),   A_i = q_i b_i + q_{i+h} b_{i+h},
//                                                       B_i = q_{i+h} b_i - q_i b_{i+h}
// over the D/2 channel pairs (i, i + h = i + D/2) of core/numerics/rope.h. For the tokens
// t0 + k (k < 32) of a tile starting at t0, turning (A_i, B_i) by t0θ_i once per tile gives
// (α_i, β_i) with q·RoPE_{t0+k}(b) = Σ_i α_i cos(kθ_i) + β_i sin(kθ_i): a 16-bit MMA of the
// per-row (α, β) against one fixed (32 token, D) cos/sin table, the same for every tile.
//
// A warp's tiles are kWarpsPerHead tiles apart (kernels/decode_kernel.cuh), so from its
// first tile on it turns (α, β) by one fixed angle per tile, ψ_i = stride·32θ_i: four FMAs
// per pair against (cos ψ_i, sin ψ_i) from step_rotation, no sincos in the tile loop. The
// rounding of the turns adds up along a warp's tiles; up to 128k tokens it stays below the
// F16 words' own 2^-12 (tests/backends/test_cuda_bias_tables.cpp).
//
// Fragment layout (mma.sync m16n8k16): quad lane t holds pair slots p = 0 .. D/8-1; slot
// p covers pair bias_pair_of(t, p). At k-step s, slot 2s is reduction columns (2t, 2t+1)
// = (cos, sin) of its pair and slot 2s+1 columns (2t+8, 2t+9). A lane's slots are the
// pairs whose both channels lie in the K chunks it already reads Q for (needs D % 128 == 0).

#include <cstdint>
#include <vector>

namespace tilepath::cuda {

inline constexpr int kBiasTileTokens = 32;    // one warp tile: the table's token rows
inline constexpr int kBiasMaxWarpStride = 2;  // tiles between a warp's tiles: its kernel's MMA warps per kv head

// Channel pair i (< D/2) of pair slot p of quad lane t (t < 4, p < D/8).
constexpr int bias_pair_of(int quad, int slot) { return 64 * (slot / 16) + 16 * quad + slot % 16; }

struct BiasRotationTables {
  int head_dim = 0;
  // [D/2] the turn of pair i per 32-token step, 2^32 * frac(32 θ_i / 2π): the tile at t0 =
  // 32m turns pair i by m * phase_step[i] (mod 2^32, exact integer arithmetic) turns / 2^32.
  std::vector<std::uint32_t> phase_step;
  // [4 n-tiles][D/32][32 lanes][4 words]: lane (g, t)'s B-fragment words of n-tile n, k-steps
  // 2j and 2j+1 (word 2·u + w: step 2j+u, w = 0 slot 2s, w = 1 slot 2s+1), each the f16 pair
  // (cos kθ_i, sin kθ_i) of token k = 8n + g in the low / high half.
  std::vector<std::uint32_t> tile_table;
  // [stride 1 .. kBiasMaxWarpStride][D/16 slot pairs][4 quads][4 floats]: quad lane t's
  // (cos ψ, sin ψ) of slots 2j and 2j+1 (pairs bias_pair_of(t, 2j), bias_pair_of(t, 2j+1)),
  // ψ = stride·32θ_i, from float64 angles rounded once to float.
  std::vector<float> step_rotation;
};

// Offset in step_rotation of stride s's block (s in 1 .. kBiasMaxWarpStride).
constexpr int bias_step_rotation_offset(int head_dim, int stride) { return (stride - 1) * (head_dim / 16) * 16; }

// head_dim: a multiple of 128.
BiasRotationTables make_bias_rotation_tables(int head_dim);

}  // namespace tilepath::cuda
