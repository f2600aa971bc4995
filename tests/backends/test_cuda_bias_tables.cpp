// The CUDA k_bias stage's tables (backends/cuda/bias_rotation_tables.h), checked by running
// the stage's arithmetic on the host exactly as the kernel orders it (EmulatedKBias,
// backends/cuda/emulated_k_bias.h): the per-row (A, B) coefficients, the integer phase of a
// warp's first tile, the high and low F16 (α, β) words, the MMA fragment layout of the high
// and low cos/sin tables and the turn from tile to tile. Its sum must be q·RoPE_t(b) for
// every token of every tile.

#include "backends/cuda/bias_rotation_tables.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cuda/emulated_k_bias.h"
#include "core/numerics/rope.h"

namespace tilepath::cuda {
namespace {

struct BiasRow {
  std::vector<float> q, b;
  double scale = 0;  // sum |q_d b_d|: the size the error is measured against
};

// Sum |q_d b_d| of a row: the size a score's error is measured against.
double bias_scale(const std::vector<float>& q, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t d = 0; d < q.size(); ++d) s += std::fabs(double(q[d]) * b[d]);
  return s;
}

BiasRow qwen_like_row(int D, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> unit;
  BiasRow row;
  row.q.resize(D);
  row.b.resize(D);
  for (int d = 0; d < D; ++d) {
    row.q[d] = unit(rng);
    row.b[d] = 20.0f * unit(rng);  // a Qwen-like bias: tens of times the residual's spread
  }
  row.scale = bias_scale(row.q, row.b);
  return row;
}

// The bias of models/keys/qwen_bias.json's shape: about 100 residual stds on 4 channels of
// the head and nothing on the rest, so that no rounding cancels against another channel's.
BiasRow few_channel_row(int D, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> unit;
  BiasRow row;
  row.q.resize(D);
  row.b.assign(D, 0.0f);
  for (int d = 0; d < D; ++d) row.q[d] = unit(rng);
  for (int d : {3, 21, D / 2 + 3, D - 5}) row.b[d] = 100.0f * (1.0f + 0.3f * unit(rng));
  row.scale = bias_scale(row.q, row.b);
  return row;
}

// Worst |emulated - exact| over its row's scale along one warp's walk of `tiles` tiles.
double worst_walk_error(const BiasRotationTables& tables, const BiasRow& row, std::uint32_t m0, int stride, int tiles,
                        BiasWords words = BiasWords::high_and_low) {
  EmulatedKBias walk(tables, row.q, row.b, m0, stride, words);
  double worst = 0;
  for (int i = 0; i < tiles; ++i) {
    const std::vector<double> got = walk.next_tile();
    const int t0 = (int(m0) + i * stride) * kBiasTileTokens;
    for (int k = 0; k < kBiasTileTokens; ++k)
      worst = std::max(worst, std::fabs(got[k] - exact_bias_score(row.q, row.b, t0 + k)));
  }
  return worst / row.scale;
}

TEST(CudaBiasTables, HighAndLowTableWordsCarryCosAndSinToF16sSquaredPrecision) {
  for (int D : {128, 256}) {
    const BiasRotationTables t = make_bias_rotation_tables(D);
    ASSERT_EQ(t.tile_table_low.size(), t.tile_table.size());
    const int groups = D / 32;
    double worst_high = 0, worst_both = 0;
    for (int n = 0; n < 4; ++n) {
      for (int j = 0; j < groups; ++j) {
        for (int lane = 0; lane < 32; ++lane) {
          for (int word = 0; word < 4; ++word) {
            const int token = 8 * n + lane / 4, slot = 2 * (2 * j + word / 2) + word % 2;
            const double angle = token * numerics::rope_pair_frequency(bias_pair_of(lane % 4, slot), D);
            const std::size_t at = ((std::size_t(n) * groups + j) * 32 + lane) * 4 + word;
            const std::uint32_t high = t.tile_table[at], low = t.tile_table_low[at];
            for (int half = 0; half < 2; ++half) {
              const double want = half ? std::sin(angle) : std::cos(angle);
              worst_high = std::max(worst_high, std::fabs(f16_half(high, half) - want));
              worst_both = std::max(worst_both, std::fabs(f16_half(high, half) + f16_half(low, half) - want));
            }
          }
        }
      }
    }
    EXPECT_LE(worst_high, std::ldexp(1.0, -12)) << "D=" << D << ": the high word is F16's rounding";
    EXPECT_GT(worst_high, std::ldexp(1.0, -14)) << "D=" << D << ": the high word rounds, or the check compared nothing";
    EXPECT_LE(worst_both, std::ldexp(1.0, -23)) << "D=" << D;
  }
}

TEST(CudaBiasTables, TheEmulatedKBiasStageIsQDotRotatedBiasAtEveryPosition) {
  for (int D : {128, 256}) {
    const BiasRotationTables tables = make_bias_rotation_tables(D);
    for (const BiasRow& row : {qwen_like_row(D, 7), few_channel_row(D, 7)}) {
      double worst = 0;
      for (std::uint32_t m0 : {0u, 1u, 127u, 2048u, 4094u})
        worst = std::max(worst, worst_walk_error(tables, row, m0, 1, 1));
      // High and low words: ~2^-23 per term, and the float phase of the first turn. One F16
      // word each would be 2^-12 (a spread bias 1e-4 of the scale, a few channels up to 1e-3);
      // a wrong fragment, pair or phase is off by ~1.
      EXPECT_LT(worst, 5e-6) << "D=" << D;
      EXPECT_GT(worst, 0.0) << "D=" << D
                            << ": float arithmetic rounds, an exact result means the check compared nothing";
    }
  }
}

// One F16 word per term is 2^-12 of it; with the bias on a few channels nothing cancels and a
// score is off by ~1e-3 of the scale, up to 0.6% of an output (bench/kbias_f16_effect.cpp).
TEST(CudaBiasTables, LowWordsRemoveTheF16RoundingOfABiasOnFewChannels) {
  const BiasRotationTables tables = make_bias_rotation_tables(128);
  for (unsigned seed : {7u, 11u, 13u}) {
    const BiasRow row = few_channel_row(128, seed);
    double high_only = 0, high_and_low = 0;
    for (std::uint32_t m0 : {0u, 1u, 127u, 2048u}) {
      high_only = std::max(high_only, worst_walk_error(tables, row, m0, 1, 1, BiasWords::high_only));
      high_and_low = std::max(high_and_low, worst_walk_error(tables, row, m0, 1, 1));
    }
    EXPECT_GT(high_only, 1e-4) << "seed " << seed;
    EXPECT_LT(high_and_low, high_only / 100) << "seed " << seed;
  }
}

// The per-tile turn adds its float rounding along a warp's walk. By the float angle alone it
// would add ~2^-25 per tile in the same direction: 1.4e-4 of the scale after 128k tokens
// with a bias on a few channels, as much as one F16 word. Turned by the angle and its float
// remainder, only the rounding of α and β adds up. Along the longest walk (one or two warps
// per kv head, from the first tile to 128k tokens) it stays below 2e-5.
TEST(CudaBiasTables, TheTurnAlongAWarpsTilesStaysSmallUpTo128kTokens) {
  const int D = 128;
  const BiasRotationTables tables = make_bias_rotation_tables(D);
  for (int stride : {1, 2}) {
    for (unsigned seed : {7u, 11u}) {
      for (const BiasRow& row : {qwen_like_row(D, seed), few_channel_row(D, seed)}) {
        const int tiles = 131072 / kBiasTileTokens / stride;
        const double walk = worst_walk_error(tables, row, 1, stride, tiles);
        const double first = worst_walk_error(tables, row, 1, stride, 8);
        EXPECT_LT(walk, 2e-5) << "stride " << stride << " seed " << seed << ", " << tiles << " tiles";
        EXPECT_GT(walk, first) << "stride " << stride << " seed " << seed << ": the walk's rounding grows along it";
      }
    }
  }
}

TEST(CudaBiasTables, StepRotationIsTheTurnBetweenAWarpsTiles) {
  const int D = 256;
  const BiasRotationTables t = make_bias_rotation_tables(D);
  ASSERT_EQ(t.step_rotation.size(), std::size_t(kBiasMaxWarpStride) * D);
  for (int stride = 1; stride <= kBiasMaxWarpStride; ++stride) {
    for (int quad = 0; quad < 4; ++quad) {
      for (int slot : {0, 1, 17, D / 8 - 1}) {
        const double psi = stride * 32.0 * numerics::rope_pair_frequency(bias_pair_of(quad, slot), D);
        const float* r = &t.step_rotation[bias_step_rotation_offset(D, stride) + ((slot / 2) * 4 + quad) * 4];
        EXPECT_NEAR(r[2 * (slot % 2)], std::cos(psi), 1e-7)
            << "stride " << stride << " quad " << quad << " slot " << slot;
        EXPECT_NEAR(r[2 * (slot % 2) + 1], std::sin(psi), 1e-7)
            << "stride " << stride << " quad " << quad << " slot " << slot;
      }
    }
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
