// The break-even of a K8/V8 case against its K16/V8 control, with hand-computed
// numbers, per 1k tokens when both tile sizes are known.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "core/analysis/break_even_analysis.h"
#include "tests/analysis/analysis_test_cases.h"

namespace tilepath::analysis {
namespace {

using analysis_test::CaseBuilder;
using analysis_test::point;

constexpr double kTol = 1e-12;

// K8/V8 transform/full, 64-token tiles: memory 1.0 + 1.0 per tile, k_prep 0.5 + qk 0.75 on qk_mma.
CaseSummary k8v8_case(std::int64_t id = 1, TransformMode mode = TransformMode::full, double latency = 100) {
  return CaseBuilder(id, point(KvDtype::k8v8, KPath::transform, mode))
      .latency(latency)
      .interval(2.5)
      .tile_tokens(64)
      .cost(Stage::k_load, CostMethod::isolated, 1.0)
      .cost(Stage::v_load, CostMethod::isolated, 1.0)
      .cost(Stage::k_prep, CostMethod::removed, 0.5)
      .cost(Stage::qk, CostMethod::removed, 0.75);
}

// K16/V8 k16/separate_kv, 128-token tiles: memory 4.0 + 2.0 per tile.
CaseSummary k16v8_case() {
  return CaseBuilder(2, point(KvDtype::k16v8, KPath::k16, TransformMode::separate_kv))
      .latency(150)
      .interval(6.5)
      .tile_tokens(128)
      .cost(Stage::k_load, CostMethod::isolated, 4.0)
      .cost(Stage::v_load, CostMethod::isolated, 2.0)
      .cost(Stage::qk, CostMethod::removed, 0.5);
}

CaseSummary k16v16_case() {
  return CaseBuilder(3, point(KvDtype::k16v16, KPath::k16, TransformMode::none)).latency(200);
}

TEST(BreakEvenAnalysis, PerThousandTokensWhenBothTileSizesAreKnown) {
  const std::vector<CaseSummary> cases = {k8v8_case(), k16v8_case(), k16v16_case()};
  const std::optional<BreakEvenAnalysis> b = break_even_for(cases[0], cases);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->unit, "us_per_1k_tokens");
  EXPECT_EQ(b->k16v8_case_id, 2);
  EXPECT_EQ(b->k16v16_case_id, 3);
  // Measured IIs per 1k tokens: 2.5 x 1000/64 and 6.5 x 1000/128.
  EXPECT_NEAR(b->ii_k8v8_us, 2.5 * 1000 / 64, kTol);
  EXPECT_NEAR(b->ii_k16v8_us, 6.5 * 1000 / 128, kTol);
  EXPECT_EQ(b->ii_source, "measured");
  ASSERT_TRUE(b->decomposition.has_value());
  const BreakEven& d = *b->decomposition;
  EXPECT_NEAR(d.delta_us, 2.5 * 1000 / 64 - 6.5 * 1000 / 128, kTol);
  // Extra K16 HBM: memory busy 6.0 per 128 tokens against 2.0 per 64 tokens.
  EXPECT_NEAR(d.extra_k16_hbm_us, 6.0 * 1000 / 128 - 2.0 * 1000 / 64, kTol);
  // k_prep on qk_mma (0.5 + 0.75 = 1.25 per tile) is below the memory agent (2.0): hidden.
  EXPECT_NEAR(d.unhidden_k8_prep_us, 0.0, kTol);
  EXPECT_NEAR(d.delta_us, d.unhidden_k8_prep_us + d.pipeline_penalty_us - d.extra_k16_hbm_us, kTol);
  // V hidden fraction from the three latencies: 1 - (150 - 200) / (100 - 200).
  EXPECT_NEAR(b->v_hidden_fraction, 0.5, kTol);
  const nlohmann::json j = b->to_json();
  EXPECT_EQ(j.at("k16v8_case"), 2);
  EXPECT_EQ(j.at("unit"), "us_per_1k_tokens");
  EXPECT_NEAR(j.at("delta").get<double>(), d.delta_us, kTol);
}

TEST(BreakEvenAnalysis, UnhiddenPrepWhenTheConversionLimits) {
  CaseBuilder slow_prep(1, point(KvDtype::k8v8, KPath::transform, TransformMode::full));
  slow_prep.latency(100).interval(3.0).tile_tokens(64);
  slow_prep.cost(Stage::k_load, CostMethod::isolated, 1.0).cost(Stage::v_load, CostMethod::isolated, 1.0);
  slow_prep.cost(Stage::k_prep, CostMethod::removed, 1.5).cost(Stage::qk, CostMethod::removed, 1.0);
  const std::vector<CaseSummary> cases = {slow_prep, k16v8_case()};
  const BreakEven d = *break_even_for(cases[0], cases)->decomposition;
  // II(K8/V8) = 2.5 (qk_mma) per tile; without k_prep 2.0 (memory): 0.5 per tile unhidden.
  EXPECT_NEAR(d.unhidden_k8_prep_us, 0.5 * 1000 / 64, kTol);
}

TEST(BreakEvenAnalysis, PerTileWithoutTileSizesAndNotesWhatIsMissing) {
  CaseSummary k8 = k8v8_case();
  CaseSummary k16 = k16v8_case();
  for (CaseSummary* c : {&k8, &k16})
    std::erase_if(c->record.measurements, [](const Measurement& m) { return m.name == "tile_tokens"; });
  std::vector<CaseSummary> cases = {k8, k16};
  std::optional<BreakEvenAnalysis> b = break_even_for(cases[0], cases);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->unit, "us_per_tile");
  EXPECT_NEAR(b->decomposition->delta_us, 2.5 - 6.5, kTol);
  EXPECT_TRUE(std::isnan(b->v_hidden_fraction));  // no K16/V16 case

  cases[1].record.stage_costs.clear();
  b = break_even_for(cases[0], cases);
  EXPECT_FALSE(b->decomposition.has_value());
  EXPECT_NE(b->decomposition_note.find("K16/V8 case #2"), std::string::npos) << b->decomposition_note;

  EXPECT_FALSE(break_even_for(cases[0], {cases[0]}).has_value());  // no control
  EXPECT_FALSE(break_even_for(cases[1], cases).has_value());       // not a K8/V8 case
}

TEST(BreakEvenAnalysis, TheTableUsesTheFastestK8V8VariantPerShape) {
  const std::vector<CaseSummary> cases = {k8v8_case(1, TransformMode::full, 100),
                                          k8v8_case(4, TransformMode::k_only, 90),
                                          k8v8_case(5, TransformMode::separate_kv, 95), k16v8_case(), k16v16_case()};
  const std::vector<BreakEvenAnalysis> rows = break_even_table(cases);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].k8v8_case_id, 4);
  EXPECT_EQ(rows[0].k8v8_variant, "k8v8/transform/k_only");
}

// A list read without stage costs (CaseSummary::has_stage_costs set, no rows): the table
// reads the paired cases' costs, and only theirs, and matches the table of the eager list.
TEST(BreakEvenAnalysis, TheTableReadsTheStageCostsOfThePairedCasesOnly) {
  const std::vector<CaseSummary> eager = {k8v8_case(1, TransformMode::full, 100),
                                          k8v8_case(4, TransformMode::k_only, 90), k16v8_case(), k16v16_case()};
  std::vector<CaseSummary> lazy = eager;
  for (CaseSummary& c : lazy) {
    c.has_stage_costs = !c.record.stage_costs.empty();
    c.record.stage_costs.clear();
  }
  std::vector<std::int64_t> asked;
  const StageCostReader read = [&](std::int64_t case_id) {
    asked.push_back(case_id);
    for (const CaseSummary& c : eager)
      if (c.case_id == case_id) return c.record.stage_costs;
    return std::vector<StageCostRow>{};
  };
  const std::vector<BreakEvenAnalysis> want = break_even_table(eager);
  const std::vector<BreakEvenAnalysis> got = break_even_table(lazy, read);
  ASSERT_EQ(want.size(), 1u);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].to_json(), want[0].to_json());
  ASSERT_TRUE(got[0].decomposition.has_value());
  EXPECT_EQ(asked, (std::vector<std::int64_t>{4, 2}));  // the fastest K8/V8 case and its control

  // Without a reader the listed cases have no costs to decompose.
  EXPECT_FALSE(break_even_table(lazy)[0].decomposition.has_value());
}

}  // namespace
}  // namespace tilepath::analysis
