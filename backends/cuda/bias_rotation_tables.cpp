#include "backends/cuda/bias_rotation_tables.h"

#include <cmath>
#include <cstring>
#include <numbers>
#include <stdexcept>
#include <string>

#include "core/numerics/rope.h"

namespace tilepath::cuda {
namespace {

std::uint16_t bits_of(_Float16 h) {
  std::uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

// x (|x| <= 1) as a high F16 word and the F16 of what it leaves, both from float64.
struct F16Split {
  std::uint16_t high, low;
};
F16Split f16_split(double x) {
  const _Float16 high = static_cast<_Float16>(x);
  return {bits_of(high), bits_of(static_cast<_Float16>(x - static_cast<double>(high)))};
}

}  // namespace

BiasRotationTables make_bias_rotation_tables(int head_dim) {
  if (head_dim <= 0 || head_dim % 128 != 0)
    throw std::invalid_argument("k_bias tables: head_dim " + std::to_string(head_dim) + " is not a multiple of 128");
  const int D = head_dim, half = D / 2;
  BiasRotationTables t;
  t.head_dim = D;
  t.phase_step.resize(half);
  for (int i = 0; i < half; ++i) {
    const double turns = kBiasTileTokens * numerics::rope_pair_frequency(i, D) / (2 * std::numbers::pi);
    t.phase_step[i] = static_cast<std::uint32_t>(std::llround(std::ldexp(turns - std::floor(turns), 32)));
  }
  const int groups = D / 32;  // uint4 per lane per n-tile: two k-steps
  t.tile_table.resize(static_cast<std::size_t>(4) * groups * 32 * 4);
  t.tile_table_low.resize(t.tile_table.size());
  for (int n = 0; n < 4; ++n) {
    for (int j = 0; j < groups; ++j) {
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, quad = lane % 4, token = 8 * n + g;
        for (int word = 0; word < 4; ++word) {
          const int step = 2 * j + word / 2;
          const int slot = 2 * step + word % 2;
          const double angle = token * numerics::rope_pair_frequency(bias_pair_of(quad, slot), D);
          const F16Split cs = f16_split(std::cos(angle)), sn = f16_split(std::sin(angle));
          const std::size_t at = ((static_cast<std::size_t>(n) * groups + j) * 32 + lane) * 4 + word;
          t.tile_table[at] = cs.high | (std::uint32_t(sn.high) << 16);
          t.tile_table_low[at] = cs.low | (std::uint32_t(sn.low) << 16);
        }
      }
    }
  }
  t.step_rotation.resize(bias_step_rotation_floats(D));
  t.step_rotation_low.resize(t.step_rotation.size());
  for (int stride = 1; stride <= kBiasMaxWarpStride; ++stride) {
    for (int j = 0; j < D / 16; ++j) {
      for (int quad = 0; quad < 4; ++quad) {
        const std::size_t at = bias_step_rotation_offset(D, stride) + (j * 4 + quad) * 4;
        for (int k = 0; k < 2; ++k) {
          const double psi = stride * kBiasTileTokens * numerics::rope_pair_frequency(bias_pair_of(quad, 2 * j + k), D);
          const double cs_sn[2] = {std::cos(psi), std::sin(psi)};
          for (int c = 0; c < 2; ++c) {
            const float high = static_cast<float>(cs_sn[c]);
            t.step_rotation[at + 2 * k + c] = high;
            t.step_rotation_low[at + 2 * k + c] = static_cast<float>(cs_sn[c] - high);
          }
        }
      }
    }
  }
  return t;
}

}  // namespace tilepath::cuda
