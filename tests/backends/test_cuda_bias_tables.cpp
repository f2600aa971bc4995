// The CUDA k_bias stage's tables (backends/cuda/bias_rotation_tables.h), checked by running
// the stage's arithmetic on the host exactly as the kernel orders it (EmulatedKBias,
// backends/cuda/emulated_k_bias.h): the per-row (A, B) coefficients, the integer phase of a
// warp's first tile, the F16 (α, β) words, the MMA fragment layout of the cos/sin table and
// the turn from tile to tile. Its sum must be q·RoPE_t(b) for every token of every tile.

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

BiasRow qwen_like_row(int D, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> unit;
  BiasRow row;
  row.q.resize(D);
  row.b.resize(D);
  for (int d = 0; d < D; ++d) {
    row.q[d] = unit(rng);
    row.b[d] = 20.0f * unit(rng);  // a Qwen-like bias: tens of times the residual's spread
    row.scale += std::fabs(double(row.q[d]) * row.b[d]);
  }
  return row;
}

TEST(CudaBiasTables, TheEmulatedKBiasStageIsQDotRotatedBiasAtEveryPosition) {
  for (int D : {128, 256}) {
    const BiasRotationTables tables = make_bias_rotation_tables(D);
    const BiasRow row = qwen_like_row(D, 7);
    double worst = 0;
    for (std::uint32_t m0 : {0u, 1u, 127u, 2048u, 4094u}) {
      EmulatedKBias stage(tables, row.q, row.b, m0, 1);
      const std::vector<double> got = stage.next_tile();
      const int t0 = int(m0) * kBiasTileTokens;
      for (int k = 0; k < kBiasTileTokens; ++k)
        worst = std::max(worst, std::fabs(got[k] - exact_bias_score(row.q, row.b, t0 + k)));
    }
    // F16 (α, β) and table (2^-12 per term) bound it; a wrong fragment, pair or phase is off by ~scale.
    EXPECT_LT(worst / row.scale, 2e-4) << "D=" << D;
    EXPECT_GT(worst, 0.0) << "D=" << D << ": the F16 table rounds, an exact result means the check compared nothing";
  }
}

// The per-tile turn adds its rounding along a warp's walk. Along the longest walk (one or
// two warps per kv head, from the first tile to 128k tokens) each tile must be as close as
// the same tile with its (α, β) set from the exact phase: the F16 words' rounding, not the
// walk, sets the error.
TEST(CudaBiasTables, TheTurnAlongAWarpsTilesAddsNoErrorUpTo128kTokens) {
  const int D = 128;
  const BiasRotationTables tables = make_bias_rotation_tables(D);
  for (int stride : {1, 2}) {
    for (unsigned seed : {7u, 11u}) {
      const BiasRow row = qwen_like_row(D, seed);
      EmulatedKBias walk(tables, row.q, row.b, 1, stride);
      const auto tile_error = [&](const std::vector<double>& got, int tile) {
        double e = 0;
        for (int k = 0; k < kBiasTileTokens; ++k)
          e = std::max(e, std::fabs(got[k] - exact_bias_score(row.q, row.b, tile * kBiasTileTokens + k)));
        return e / row.scale;
      };
      double walk_worst = 0, fresh_worst = 0;
      int tiles = 0;
      for (int tile = 1; tile * kBiasTileTokens < 131072; tile += stride, ++tiles) {
        walk_worst = std::max(walk_worst, tile_error(walk.next_tile(), tile));
        fresh_worst =
            std::max(fresh_worst, tile_error(EmulatedKBias(tables, row.q, row.b, tile, stride).next_tile(), tile));
      }
      EXPECT_LT(walk_worst, 1.25 * fresh_worst) << "stride " << stride << " seed " << seed << ", " << tiles << " tiles";
      EXPECT_LT(fresh_worst, 2.5e-4) << "stride " << stride << " seed " << seed;
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
