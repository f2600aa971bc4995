#pragma once
// The CUDA kernels' k_bias stage (kernels/decode_stages.cuh, kernels/decode_kernel.cuh
// make_bias_state) run on the host in the kernel's own order and precision: the per-row (A, B)
// coefficients, the integer phase of a warp's first tile, the high and low F16 (α, β) words
// against the high and low F16 cos/sin tables (backends/cuda/bias_rotation_tables.h) and the
// float turn from tile to tile.
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
// 2^shift; then per tile the high and low F16 (α, β) words against the high and low cos/sin
// tables, and a turn by step_rotation and step_rotation_low to the warp's next tile, stride
// tiles on. The product the kernel leaves out (low x low, 2^-24 of a term) is left out here
// too. BiasWords::high_only leaves out the low F16 words as well: the stage with one F16 word
// per term, to show what the low words are for.
enum class BiasWords { high_and_low, high_only };

class EmulatedKBias {
 public:
  EmulatedKBias(const BiasRotationTables& t, const std::vector<float>& q, const std::vector<float>& b, std::uint32_t m0,
                int stride, BiasWords words = BiasWords::high_and_low)
      : t_(t), stride_(stride), low_words_(words == BiasWords::high_and_low) {
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
        // the high F16 words and the F16 of what they leave (exact float differences)
        const float alpha_high = round_f16(alpha_[quad][slot]), beta_high = round_f16(beta_[quad][slot]);
        const double alpha_low = round_f16(alpha_[quad][slot] - alpha_high);
        const double beta_low = round_f16(beta_[quad][slot] - beta_high);
        // slot p is at k-step p / 2, word (p % 2) of that step; steps 2j, 2j+1 share a uint4
        const int step = slot / 2, j = step / 2, word = 2 * (step % 2) + slot % 2;
        for (int token = 0; token < kBiasTileTokens; ++token) {
          const int n = token / 8, lane = 4 * (token % 8) + quad;
          const std::size_t at = ((std::size_t(n) * groups + j) * 32 + lane) * 4 + word;
          const std::uint32_t e = t_.tile_table[at], e_low = t_.tile_table_low[at];
          // high x high + low x high (the MMA's padding rows) + high x low (a second MMA)
          out[token] += double(alpha_high) * f16_half(e, 0) + double(beta_high) * f16_half(e, 1);
          if (!low_words_) continue;
          out[token] += alpha_low * f16_half(e, 0) + beta_low * f16_half(e, 1);
          out[token] += double(alpha_high) * f16_half(e_low, 0) + double(beta_high) * f16_half(e_low, 1);
        }
        const std::size_t at = bias_step_rotation_offset(D, stride_) + ((slot / 2) * 4 + quad) * 4 + 2 * (slot % 2);
        turn_split(alpha_[quad][slot], beta_[quad][slot], t_.step_rotation[at], t_.step_rotation[at + 1],
                   t_.step_rotation_low[at], t_.step_rotation_low[at + 1]);
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
  static void turn_split(float& alpha, float& beta, float cs, float sn, float cs_low,
                         float sn_low) {  // turn_pair_split
    const float a = alpha, b = beta;
    alpha = std::fma(a, cs, std::fma(b, sn, std::fma(a, cs_low, b * sn_low)));
    beta = std::fma(b, cs, std::fma(-a, sn, std::fma(b, cs_low, -a * sn_low)));
  }
  const BiasRotationTables& t_;
  int stride_;
  bool low_words_;
  int shift_ = 0;
  float alpha_[4][64] = {}, beta_[4][64] = {};
};

}  // namespace tilepath::cuda
