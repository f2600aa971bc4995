// The gate's metrics on hand-made rows: relative L2, max abs, KL, top-k agreement, the
// summaries over rows and the verdict against thresholds.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "core/numerics/gate_metrics.h"

namespace tilepath::numerics {
namespace {

TEST(GateMetrics, TopKAgreementCountsSharedIndices) {
  const double ref[] = {0.5, 0.2, 0.1, 0.1, 0.05, 0.05};
  const double same[] = {0.4, 0.3, 0.1, 0.1, 0.05, 0.05};
  const double swapped[] = {0.05, 0.2, 0.1, 0.1, 0.05, 0.5};
  EXPECT_EQ(top_k_agreement(ref, same, 6, 2), 1.0);
  EXPECT_EQ(top_k_agreement(ref, swapped, 6, 1), 0.0);   // the top token moved
  EXPECT_EQ(top_k_agreement(ref, swapped, 6, 2), 0.5);   // {0,1} against {5,1}
  EXPECT_EQ(top_k_agreement(ref, swapped, 6, 32), 1.0);  // k beyond the tokens: all of them
}

TEST(GateMetrics, KlIsZeroForEqualWeightsAndMatchesTheFormula) {
  const double p[] = {0.5, 0.25, 0.25}, q[] = {0.25, 0.5, 0.25};
  EXPECT_EQ(kl_divergence(p, p, 3), 0.0);
  EXPECT_NEAR(kl_divergence(p, q, 3), 0.5 * std::log(2.0) + 0.25 * std::log(0.5), 1e-15);
  const double zero[] = {1.0, 0.0, 0.0};
  EXPECT_GT(kl_divergence(p, zero, 3), 100);  // a lost token costs a lot, never infinity
}

TEST(GateMetrics, RowBuilderAccumulatesOverTheRowsQHeads) {
  GateRowBuilder row(3, 1, 2, 2);
  const double w[] = {0.5, 0.5};
  const double ref_a[] = {1, 0}, out_a[] = {1, 0.3};  // diff 0.3
  const double ref_b[] = {0, 2}, out_b[] = {0.4, 2};  // diff 0.4
  row.add_q_head(ref_a, out_a, w, w);
  row.add_q_head(ref_b, out_b, w, w);
  const GateRowMetrics m = row.finish();
  EXPECT_EQ(m.request, 3);
  EXPECT_EQ(m.kv_head, 1);
  EXPECT_NEAR(m.rel_l2, std::sqrt((0.09 + 0.16) / (1 + 4)), 1e-15);
  EXPECT_NEAR(m.max_abs, 0.4, 1e-15);
  EXPECT_EQ(m.kl, 0.0);
  EXPECT_EQ(m.top8, 1.0);
}

TEST(GateMetrics, SummariesAndTheVerdict) {
  GateMetrics m;
  for (double e : {0.01, 0.03, 0.2}) m.rows.push_back({0, 0, e, e, e / 10, 1 - e, 1 - e});
  m.rows_total = 3;
  m.summarise();
  EXPECT_EQ(m.rel_l2.worst, 0.2);
  EXPECT_EQ(m.rel_l2.median, 0.03);
  EXPECT_EQ(m.top8.worst, 0.8);  // the smallest agreement
  GateThresholds t;
  t.rel_l2 = 0.1;
  t.kl = 0.05;
  t.top8 = 0.5;
  t.top32 = 0.5;
  const GateVerdict v = judge(m, t);
  EXPECT_FALSE(v.passed);
  ASSERT_EQ(v.failures.size(), 1u);
  EXPECT_EQ(v.failures[0], "rel_l2 0.2 > 0.1");
  t.rel_l2 = NAN;  // not gated
  EXPECT_TRUE(judge(m, t).passed);
  EXPECT_FALSE(judge(GateMetrics{}, t).passed);  // nothing checked is no pass
  const nlohmann::json j = m.to_json();
  EXPECT_EQ(j["rows_checked"], 3);
  EXPECT_EQ(j["kl"]["worst"], 0.02);
}

TEST(GateMetrics, ANonFiniteRowIsTheWorst) {
  GateMetrics m;
  m.rows.push_back({0, 0, 0.01, 0.01, 0.0, 1, 1});
  m.rows.push_back({0, 1, NAN, NAN, NAN, NAN, NAN});
  m.summarise();
  EXPECT_EQ(m.rel_l2.worst, INFINITY);
  EXPECT_EQ(m.top8.worst, -INFINITY);
  EXPECT_FALSE(judge(m, GateThresholds{}).passed);
}

TEST(GateMetrics, ThresholdsFromJsonOverrideAndRefuseUnknownKeys) {
  const GateThresholds t = GateThresholds::from_json(nlohmann::json{{"rel_l2", 0.02}, {"kl", nullptr}});
  EXPECT_EQ(t.rel_l2, 0.02);
  EXPECT_TRUE(std::isnan(t.kl));
  EXPECT_EQ(t.top8, GateThresholds{}.top8);
  EXPECT_THROW(GateThresholds::from_json(nlohmann::json{{"top9", 1}}), std::invalid_argument);
  EXPECT_THROW(GateThresholds::from_json(nlohmann::json{{"kl", "small"}}), std::invalid_argument);
  EXPECT_THROW(GateThresholds::from_json(nlohmann::json::array()), std::invalid_argument);
}

}  // namespace
}  // namespace tilepath::numerics
