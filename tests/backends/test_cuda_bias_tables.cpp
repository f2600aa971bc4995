// The CUDA k_bias stage's tables (backends/cuda/bias_rotation_tables.h), checked by running
// the stage's arithmetic on the host exactly as the kernel orders it: the per-row (A, B)
// coefficients, the integer phase per tile, the F16 (α, β) words and the MMA fragment
// layout of the cos/sin table. Its sum must be q·RoPE_t(b) for every token of the tile.

#include "backends/cuda/bias_rotation_tables.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/numerics/rope.h"

namespace tilepath::cuda {
namespace {

float round_f16(float x) { return static_cast<float>(static_cast<_Float16>(x)); }

float f16_half(std::uint32_t word, int high) {
  const auto bits = static_cast<std::uint16_t>(high ? word >> 16 : word & 0xFFFFu);
  _Float16 h;
  std::memcpy(&h, &bits, sizeof h);
  return static_cast<float>(h);
}

// q.RoPE_t(b) in float64, the definition (core/numerics/rope.h).
double exact_bias_score(const std::vector<float>& q, const std::vector<float>& b, int position) {
  std::vector<double> rotated(b.begin(), b.end());
  numerics::apply_rope(rotated.data(), static_cast<int>(b.size()), position);
  double sum = 0;
  for (std::size_t d = 0; d < b.size(); ++d) sum += q[d] * rotated[d];
  return sum;
}

// The kernel's k_bias sum for the 32 tokens of the tile starting at t0, one row.
std::vector<double> emulated_bias_scores(const BiasRotationTables& t, const std::vector<float>& q,
                                         const std::vector<float>& b, int t0) {
  const int D = t.head_dim, half = D / 2, slots = D / 8, groups = D / 32;
  float a[4][64], bb[4][64], magnitude = 0;
  for (int quad = 0; quad < 4; ++quad) {
    for (int slot = 0; slot < slots; ++slot) {
      const int i = bias_pair_of(quad, slot);
      a[quad][slot] = std::fma(q[i], b[i], q[i + half] * b[i + half]);
      bb[quad][slot] = std::fma(q[i + half], b[i], -q[i] * b[i + half]);
      magnitude = std::max({magnitude, std::fabs(a[quad][slot]), std::fabs(bb[quad][slot])});
    }
  }
  int exponent = 0;
  std::frexp(magnitude, &exponent);
  const int shift = magnitude > 0 ? std::clamp(13 - exponent, -100, 100) : 0;
  const auto m = static_cast<std::uint32_t>(t0) / 32u;
  std::vector<double> out(kBiasTileTokens, 0.0);
  for (int quad = 0; quad < 4; ++quad) {
    for (int slot = 0; slot < slots; ++slot) {
      const float A = std::ldexp(a[quad][slot], shift), B = std::ldexp(bb[quad][slot], shift);
      const std::uint32_t phase = m * t.phase_step[bias_pair_of(quad, slot)];
      const float angle = static_cast<float>(static_cast<std::int32_t>(phase)) * 1.4629180792671596e-09f;
      const float cs = std::cos(angle), sn = std::sin(angle);
      const float alpha = std::fma(A, cs, B * sn), beta = std::fma(B, cs, -A * sn);
      const double alpha16 = round_f16(alpha), beta16 = round_f16(beta);
      // slot p is at k-step p / 2, word (p % 2) of that step; steps 2j, 2j+1 share a uint4
      const int step = slot / 2, j = step / 2, word = 2 * (step % 2) + slot % 2;
      for (int token = 0; token < kBiasTileTokens; ++token) {
        const int n = token / 8, lane = 4 * (token % 8) + quad;
        const std::uint32_t e = t.tile_table[((std::size_t(n) * groups + j) * 32 + lane) * 4 + word];
        const double c = f16_half(e, 0), s = f16_half(e, 1);
        out[token] += alpha16 * c + beta16 * s;
      }
    }
  }
  for (double& v : out) v = std::ldexp(v, -shift);
  return out;
}

TEST(CudaBiasTables, TheEmulatedKBiasStageIsQDotRotatedBiasAtEveryPosition) {
  for (int D : {128, 256}) {
    const BiasRotationTables tables = make_bias_rotation_tables(D);
    std::mt19937 rng(7);
    std::normal_distribution<float> unit;
    std::vector<float> q(D), b(D);
    for (int d = 0; d < D; ++d) {
      q[d] = unit(rng);
      b[d] = 20.0f * unit(rng);  // a Qwen-like bias: tens of times the residual's spread
    }
    double scale = 0;  // sum |q_d b_d|: the size the error is measured against
    for (int d = 0; d < D; ++d) scale += std::fabs(double(q[d]) * b[d]);
    double worst = 0;
    for (int t0 : {0, 32, 4064, 65536, 131040}) {
      const std::vector<double> got = emulated_bias_scores(tables, q, b, t0);
      for (int k = 0; k < kBiasTileTokens; ++k)
        worst = std::max(worst, std::fabs(got[k] - exact_bias_score(q, b, t0 + k)));
    }
    // F16 (α, β) and table (2^-12 per term) bound it; a wrong fragment, pair or phase is off by ~scale.
    EXPECT_LT(worst / scale, 2e-4) << "D=" << D;
    EXPECT_GT(worst, 0.0) << "D=" << D << ": the F16 table rounds, an exact result means the check compared nothing";
  }
}

TEST(CudaBiasTables, PhaseStepsTurnEachPairByItsAngleExactlyUpTo128kTokens) {
  const BiasRotationTables t = make_bias_rotation_tables(128);
  ASSERT_EQ(t.phase_step.size(), 64u);
  ASSERT_EQ(t.tile_table.size(), 4u * 4 * 32 * 4);
  for (int i : {0, 1, 17, 63}) {
    for (std::uint32_t m : {1u, 7u, 4095u}) {
      const double turns = 32.0 * m * numerics::rope_pair_frequency(i, 128) / (2 * M_PI);
      const double want = turns - std::floor(turns);
      const double got = std::ldexp(static_cast<double>(m * t.phase_step[i]), -32);
      const double diff = std::fabs(want - got);
      EXPECT_LT(std::min(diff, 1 - diff), 1e-6) << "pair " << i << " step " << m;
    }
  }
}

TEST(CudaBiasTables, HeadDimNotAMultipleOf128IsRefused) {
  EXPECT_THROW(make_bias_rotation_tables(64), std::invalid_argument);
  EXPECT_THROW(make_bias_rotation_tables(0), std::invalid_argument);
}

}  // namespace
}  // namespace tilepath::cuda
