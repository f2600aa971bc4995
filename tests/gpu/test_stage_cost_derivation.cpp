// Per-tile stage costs and tile interval from ablation latencies.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cuda/decode_launch.h"
#include "backends/cuda/stage_cost_derivation.h"

using namespace tilepath::cuda;

TEST(TilesPerCta, LongestRequestSplitAndRoundedUp) {
  EXPECT_EQ(tiles_per_cta({1, 100, 33}, 1, 32), 4);  // ceil(100/32)
  EXPECT_EQ(tiles_per_cta({1000}, 4, 64), 4);        // ceil(250/64)
  EXPECT_EQ(tiles_per_cta({1}, 8, 64), 1);
  EXPECT_EQ(tiles_per_cta({}, 1, 64), 0);
}

TEST(SplitTokens, EqualRangesOf32TokenMultiplesThatCoverTheLongestRequest) {
  EXPECT_EQ(split_tokens_for(32768, 66), 512);  // ceil(32768/66) = 497 -> 512
  EXPECT_EQ(split_tokens_for(1000, 4), 256);
  EXPECT_EQ(split_tokens_for(8000, 200), 64);  // 125 splits hold tokens, the rest are empty
  EXPECT_EQ(split_tokens_for(1, 1), 32);
  for (int len : {1, 31, 33, 4095, 65536})
    for (int splits : {1, 3, 66, 256}) {
      const int t = split_tokens_for(len, splits);
      EXPECT_EQ(t % 32, 0);
      EXPECT_GE(static_cast<long long>(t) * splits, len);
    }
}

TEST(KvHeadsPerCta, TwoForK8V8AtD128FromFourThousandTokensPerCta) {
  DecodeArgs a;
  a.kv_dtype = TP_KV_K8V8;
  a.k_path = TP_KPATH_FP8_QK;
  a.mode = TP_MODE_K_ONLY;
  a.head_dim = 128;
  a.q_heads = 32;
  a.kv_heads = 8;
  a.split_tokens = 4096;
  EXPECT_EQ(kv_heads_per_cta_for(a), 2);
  a.split_tokens = 4064;  // one warp tile short
  EXPECT_EQ(kv_heads_per_cta_for(a), 1);
  a.split_tokens = 8192;
  a.mode = TP_MODE_SEPARATE_KV;  // converter/MMA pairs of one head
  EXPECT_EQ(kv_heads_per_cta_for(a), 1);
  a.mode = TP_MODE_FULL;
  a.head_dim = 64;
  EXPECT_EQ(kv_heads_per_cta_for(a), 1);
  a.head_dim = 128;
  a.kv_heads = 1;  // nothing to pair
  a.q_heads = 4;
  EXPECT_EQ(kv_heads_per_cta_for(a), 1);
  a.kv_heads = 8;
  a.q_heads = 32;
  a.kv_dtype = TP_KV_K16V16;  // measured no faster
  a.k_path = TP_KPATH_K16;
  a.mode = TP_MODE_NONE;
  EXPECT_EQ(kv_heads_per_cta_for(a), 1);
}

TEST(SlopePartnerLengths, HalvesRoundingUpWhenThatLeavesEnoughTiles) {
  // 64-token tiles, one split: 4096 tokens are 64 tiles, 2048 are 32.
  EXPECT_EQ(slope_partner_lengths({1, 2, 3, 4096}, 1, 64), (std::vector<int>{1, 1, 2, 2048}));
}

TEST(SlopePartnerLengths, FewTilesGetALongerPartnerOfAtLeastTheMinimumSpan) {
  // 1024 tokens over 4 splits of 128-token tiles: 2 tiles per CTA, halved only 1.
  const std::vector<int> partner = slope_partner_lengths({1024, 1000}, 4, 128);
  EXPECT_EQ(partner, (std::vector<int>{1024 + kMinSlopeTiles * 128 * 4, 1000 + kMinSlopeTiles * 128 * 4}));
  EXPECT_EQ(tiles_per_cta({1024, 1000}, 4, 128), 2);
  EXPECT_GE(tiles_per_cta(partner, 4, 128) - 2, kMinSlopeTiles);
  // Exactly the minimum span when halved: halving stays.
  EXPECT_EQ(slope_partner_lengths({1024}, 1, 64), (std::vector<int>{512}));  // 16 vs 8 tiles
}

TEST(TileInterval, SlopeOverTwoContextsPerWave) {
  AblationLatencies a;
  a.full_us = 110;
  a.full_partner_us = 60;
  TileGeometry g{20, 10, 2};
  EXPECT_DOUBLE_EQ(tile_interval_us(a, g), 50.0 / (2 * 10));
  a.load_only_us = 90;
  a.load_only_partner_us = 50;
  EXPECT_DOUBLE_EQ(load_only_interval_us(a, g), 40.0 / (2 * 10));
  EXPECT_TRUE(std::isnan(compute_only_interval_us(a, g)));  // not measured
  a.compute_only_us = 70;
  a.compute_only_partner_us = 46;
  EXPECT_DOUBLE_EQ(compute_only_interval_us(a, g), 24.0 / (2 * 10));
  g.tiles_partner = 20;  // no change in tiles: no slope
  EXPECT_TRUE(std::isnan(tile_interval_us(a, g)));
  EXPECT_TRUE(std::isnan(load_only_interval_us(a, g)));
  EXPECT_TRUE(std::isnan(compute_only_interval_us(a, g)));
}

TEST(TileInterval, ALongerPartnerGivesTheSameSlope) {
  AblationLatencies a;
  a.full_us = 60;           // the case: 10 tiles
  a.full_partner_us = 110;  // its partner: 20 tiles
  TileGeometry g{10, 20, 2};
  EXPECT_DOUBLE_EQ(tile_interval_us(a, g), 50.0 / (2 * 10));
  a.isolated_us[TP_STAGE_QK] = 15;
  a.isolated_partner_us[TP_STAGE_QK] = 25;
  const std::vector<tp_stage_cost> costs = derive_stage_costs(a, g);
  ASSERT_EQ(costs.size(), 1u);
  EXPECT_DOUBLE_EQ(costs[0].cost_us, 10.0 / (2 * 10));
}

TEST(StageCosts, RemovedDoubledAndIsolatedSlopes) {
  AblationLatencies a;
  a.full_us = 100;
  a.removed_us[TP_STAGE_QK] = 80;
  a.twice_us[TP_STAGE_QK] = 130;
  a.twice_us[TP_STAGE_SOFTMAX] = 104;
  a.isolated_us[TP_STAGE_K_LOAD] = 70;  // the K-only load kernel: 30 us over 5 tiles
  a.isolated_partner_us[TP_STAGE_K_LOAD] = 40;
  a.isolated_us[TP_STAGE_QK] = 25;  // qk alone: 10 us over 5 tiles
  a.isolated_partner_us[TP_STAGE_QK] = 15;
  a.isolated_us[TP_STAGE_SOFTMAX] = 30;   // no partner-context run: no slope
  a.isolated_us[TP_STAGE_COMBINE] = 4.5;  // combine alone, once per step
  a.load_only_us = 90;                    // both loads: a latency metric, no stage cost
  a.load_only_partner_us = 50;
  TileGeometry g{10, 5, 1};
  const std::vector<tp_stage_cost> costs = derive_stage_costs(a, g);
  auto cost = [&](int method, int stage) -> double {
    for (const tp_stage_cost& c : costs)
      if (c.method == method && c.stage == stage) return c.cost_us;
    return NAN;  // not measured: no entry
  };
  EXPECT_DOUBLE_EQ(cost(TP_COST_REMOVED, TP_STAGE_QK), 2.0);
  EXPECT_DOUBLE_EQ(cost(TP_COST_DOUBLED, TP_STAGE_QK), 3.0);
  EXPECT_DOUBLE_EQ(cost(TP_COST_DOUBLED, TP_STAGE_SOFTMAX), 0.4);
  EXPECT_TRUE(std::isnan(cost(TP_COST_REMOVED, TP_STAGE_SOFTMAX)));  // not measured: absent
  EXPECT_DOUBLE_EQ(cost(TP_COST_ISOLATED, TP_STAGE_K_LOAD), 6.0);
  EXPECT_DOUBLE_EQ(cost(TP_COST_ISOLATED, TP_STAGE_QK), 2.0);
  EXPECT_DOUBLE_EQ(cost(TP_COST_ISOLATED, TP_STAGE_COMBINE), 4.5);
  EXPECT_TRUE(std::isnan(cost(TP_COST_ISOLATED, TP_STAGE_SOFTMAX)));
  EXPECT_TRUE(std::isnan(cost(TP_COST_ISOLATED, TP_STAGE_V_LOAD)));  // no byte-share split of load_only
  EXPECT_EQ(costs.size(), 6u);
  g.waves = 2;                                                 // a slope per wave
  EXPECT_DOUBLE_EQ(derive_stage_costs(a, g)[0].cost_us, 3.0);  // k_load, stage 0 first
}
