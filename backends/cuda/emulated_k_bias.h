#pragma once
// The CUDA kernels' k_bias stage (kernels/decode_stages.cuh, kernels/decode_kernel.cuh
// make_bias_state) run on the host in the kernel's own order and precision: the per-row (A, B)
// coefficients, the integer phase of a warp's first tile, the F16 (α, β) words against the F16
// cos/sin table (backends/cuda/bias_rotation_tables.h) and the float turn from tile to tile.
// The tables' tests check it against q·RoPE_t(b); bench/kbias_f16_effect.cpp measures what its
// rounding costs an attention output.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/cuda/bias_rotation_tables.h"
#include "core/numerics/rope.h"

namespace tilepath::cuda {

inline float round_f16(float x) { return static_cast<float>(static_cast<_Float16>(x)); }

inline float f16_half(std::uint32_t word, int high) {
  const auto bits = static_cast<std::uint16_t>(high ? word >> 16 : word & 0xFFFFu);
  _Float16 h;
  std::memcpy(&h, &bits, sizeof h);
  return static_cast<float>(h);
}

// q.RoPE_t(b) in float64, the definition (core/numerics/rope.h).
inline double exact_bias_score(const std::vector<float>& q, const std::vector<float>& b, int position) {
  std::vector<double> rotated(b.begin(), b.end());
  numerics::apply_rope(rotated.data(), static_cast<int>(b.size()), position);
  double sum = 0;
  for (std::size_t d = 0; d < b.size(); ++d) sum += q[d] * rotated[d];
  return sum;
}

// The k_bias stage of one row along one warp's tiles, as the kernel orders it
// (kernels/decode_kernel.cuh make_bias_state, kernels/decode_stages.cuh bias_scores): (A, B)
// per lane slot, turned by the exact integer phase to the warp's first tile m0, scaled by
// 2^shift; then per tile the F16 (α, β) words against the cos/sin table, and a turn by
// step_rotation to the warp's next tile, stride tiles on.
class EmulatedKBias {
 public:
  EmulatedKBias(const BiasRotationTables& t, const std::vector<float>& q, const std::vector<float>& b, std::uint32_t m0,
                int stride)
      : t_(t), stride_(stride) {
    const int half = t.head_dim / 2, slots = t.head_dim / 8;
    float magnitude = 0;
    for (int quad = 0; quad < 4; ++quad) {
      for (int slot = 0; slot < slots; ++slot) {
        const int i = bias_pair_of(quad, slot);
        float a = std::fma(q[i], b[i], q[i + half] * b[i + half]);
        float bb = std::fma(q[i + half], b[i], -q[i] * b[i + half]);
        magnitude = std::max({magnitude, std::fabs(a), std::fabs(bb)});
        const std::uint32_t phase = m0 * t.phase_step[i];
        const float half_turns = static_cast<float>(static_cast<std::int32_t>(phase)) * 4.656612873077393e-10f;
        turn(a, bb, static_cast<float>(std::cos(M_PI * half_turns)), static_cast<float>(std::sin(M_PI * half_turns)));
        alpha_[quad][slot] = a;
        beta_[quad][slot] = bb;
      }
    }
    int exponent = 0;
    std::frexp(magnitude, &exponent);
    shift_ = magnitude > 0 ? std::clamp(13 - exponent, -100, 100) : 0;
    for (int quad = 0; quad < 4; ++quad) {
      for (int slot = 0; slot < slots; ++slot) {
        alpha_[quad][slot] = std::ldexp(alpha_[quad][slot], shift_);
        beta_[quad][slot] = std::ldexp(beta_[quad][slot], shift_);
      }
    }
  }

  // The bias scores of the warp's current tile's 32 tokens; then on to its next tile.
  std::vector<double> next_tile() {
    const int D = t_.head_dim, slots = D / 8, groups = D / 32;
    std::vector<double> out(kBiasTileTokens, 0.0);
    for (int quad = 0; quad < 4; ++quad) {
      for (int slot = 0; slot < slots; ++slot) {
        const double alpha16 = round_f16(alpha_[quad][slot]), beta16 = round_f16(beta_[quad][slot]);
        // slot p is at k-step p / 2, word (p % 2) of that step; steps 2j, 2j+1 share a uint4
        const int step = slot / 2, j = step / 2, word = 2 * (step % 2) + slot % 2;
        for (int token = 0; token < kBiasTileTokens; ++token) {
          const int n = token / 8, lane = 4 * (token % 8) + quad;
          const std::uint32_t e = t_.tile_table[((std::size_t(n) * groups + j) * 32 + lane) * 4 + word];
          out[token] += alpha16 * f16_half(e, 0) + beta16 * f16_half(e, 1);
        }
        const float* r = &t_.step_rotation[bias_step_rotation_offset(D, stride_) + ((slot / 2) * 4 + quad) * 4];
        turn(alpha_[quad][slot], beta_[quad][slot], r[2 * (slot % 2)], r[2 * (slot % 2) + 1]);
      }
    }
    for (double& v : out) v = std::ldexp(v, -shift_);
    return out;
  }

 private:
  static void turn(float& alpha, float& beta, float cs, float sn) {  // kernels' turn_pair
    const float a = alpha, b = beta;
    alpha = std::fma(a, cs, b * sn);
    beta = std::fma(b, cs, -a * sn);
  }
  const BiasRotationTables& t_;
  int stride_;
  int shift_ = 0;
  float alpha_[4][64] = {}, beta_[4][64] = {};
};

}  // namespace tilepath::cuda
