#include "backends/cuda/bias_rotation_tables.h"

#include <cmath>
#include <cstring>
#include <numbers>
#include <stdexcept>
#include <string>

#include "core/numerics/rope.h"

namespace tilepath::cuda {
namespace {

std::uint16_t f16_bits(double x) {
  const _Float16 h = static_cast<_Float16>(static_cast<float>(x));  // |x| <= 1: both roundings exact enough
  std::uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
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
  for (int n = 0; n < 4; ++n) {
    for (int j = 0; j < groups; ++j) {
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, quad = lane % 4, token = 8 * n + g;
        for (int word = 0; word < 4; ++word) {
          const int step = 2 * j + word / 2;
          const int slot = 2 * step + word % 2;
          const double angle = token * numerics::rope_pair_frequency(bias_pair_of(quad, slot), D);
          const std::uint32_t packed = f16_bits(std::cos(angle)) | (std::uint32_t(f16_bits(std::sin(angle))) << 16);
          t.tile_table[((static_cast<std::size_t>(n) * groups + j) * 32 + lane) * 4 + word] = packed;
        }
      }
    }
  }
  t.step_rotation.resize(static_cast<std::size_t>(kBiasMaxWarpStride) * (D / 16) * 16);
  for (int stride = 1; stride <= kBiasMaxWarpStride; ++stride) {
    for (int j = 0; j < D / 16; ++j) {
      for (int quad = 0; quad < 4; ++quad) {
        float* out = &t.step_rotation[bias_step_rotation_offset(D, stride) + (j * 4 + quad) * 4];
        for (int k = 0; k < 2; ++k) {
          const double psi = stride * kBiasTileTokens * numerics::rope_pair_frequency(bias_pair_of(quad, 2 * j + k), D);
          out[2 * k] = static_cast<float>(std::cos(psi));
          out[2 * k + 1] = static_cast<float>(std::sin(psi));
        }
      }
    }
  }
  return t;
}

}  // namespace tilepath::cuda
