// The gate table: cells per representation × distribution (the largest context's case,
// thresholds, pass/fail, every case id), the error against context and against decode
// step, on stored cases made here with known metrics. The speed runs' kernel check
// ("random" rows, kernel_check_* rows) never appears as a gate result.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/analysis/gate_table.h"
#include "core/numerics/gate_metrics.h"
#include "core/quality/gate.h"
#include "tests/analysis/analysis_test_cases.h"

namespace tilepath::analysis {
namespace {

using analysis_test::point;

struct Metrics {
  double rel_l2, max_abs, kl, top8, top32;
};

OperatingPoint representation(KRepr repr, int context, int head_dim = 128) {
  OperatingPoint op = point(KvDtype::k8v8, KPath::transform, TransformMode::full, 2, context);
  op.k_repr = repr;
  op.head_dim = head_dim;
  return op;
}

// A case as `tilepath gate --db` stores it: the worst rows as quality rows with the
// default thresholds, the medians and row counts as measurements, gate.json listed.
CaseSummary gate_case(std::int64_t id, const OperatingPoint& op, const std::string& distribution, Metrics worst,
                      Metrics median, int seed = 1, int steps = 0) {
  CaseSummary c;
  c.case_id = id;
  c.run_id = 7;
  c.backend = "gate";
  c.device = "float64 on the host";
  c.record.id = id;
  c.record.op = op;
  c.record.case_key =
      op.key() + "|gate=" + distribution + "|seed=" + std::to_string(seed) + "|steps=" + std::to_string(steps);
  const numerics::GateThresholds t;
  auto row = [&](const char* metric, double value, double m, double threshold, bool at_most) {
    const bool passed = std::isnan(threshold) || (at_most ? value <= threshold : value >= threshold);
    c.record.quality.push_back({metric, value, threshold, passed, distribution});
    c.record.measurements.push_back({std::string("gate_") + metric + "_median", m, ""});
  };
  row("rel_l2", worst.rel_l2, median.rel_l2, t.rel_l2, true);
  row("max_abs", worst.max_abs, median.max_abs, t.max_abs, true);
  row("kl", worst.kl, median.kl, t.kl, true);
  row("top8", worst.top8, median.top8, t.top8, false);
  row("top32", worst.top32, median.top32, t.top32, false);
  c.record.measurements.push_back({"gate_rows_checked", 16, "rows"});
  c.record.measurements.push_back({"gate_rows_total", 16, "rows"});
  c.artifacts.push_back({"gate.json", "application/json", 100, ""});
  return c;
}

const Metrics kGood{0.04, 0.2, 5e-4, 0.875, 0.9};
const Metrics kGoodMedian{0.03, 0.1, 3e-4, 0.95, 0.96};
const Metrics kBad{0.3, 1.5, 0.06, 0.375, 0.6};  // rel_l2 0.3 > 0.1, kl 0.06 > 0.005, top8 0.375 < 0.5
const Metrics kBadMedian{0.25, 1.0, 0.04, 0.5, 0.7};

// A speed run's case whose quality rows are its kernel check only.
CaseSummary kernel_check_case(std::int64_t id) {
  analysis_test::CaseBuilder b(id, representation(KRepr::plain, 4096));
  b.c.record.quality = {{"rel_l2", 0.002, 0.006, true, "random"},
                        {"max_abs", 0.01, NAN, true, "random"},
                        {"kernel_check_rel_l2", 0.002, 0.006, true, "gaussian"},
                        {"kernel_check_max_abs", 0.01, NAN, true, "gaussian"}};
  return b;
}

const std::string kPlain = "k8v8/transform/full/plain/post_rope/per_head";
const std::string kPrebias = "k8v8/transform/full/prebias/post_rope/per_head";

std::vector<CaseSummary> two_by_two() {
  // plain and prebias on gaussian and qwen_bias at S = 1024 and 4096; plain fails qwen_bias.
  return {gate_case(1, representation(KRepr::plain, 1024), "gaussian", kGood, kGoodMedian),
          gate_case(2, representation(KRepr::plain, 4096), "gaussian", {0.05, 0.25, 6e-4, 0.75, 0.85}, kGoodMedian),
          gate_case(3, representation(KRepr::plain, 4096), "qwen_bias", kBad, kBadMedian),
          gate_case(4, representation(KRepr::plain, 1024), "qwen_bias", {0.2, 1.2, 0.03, 0.5, 0.7}, kBadMedian),
          gate_case(5, representation(KRepr::prebias, 4096), "qwen_bias", kGood, kGoodMedian),
          gate_case(6, representation(KRepr::prebias, 4096), "gaussian", kGood, kGoodMedian),
          kernel_check_case(9)};
}

TEST(GateTable, GateRowsAreTheFiveMetricsOffRandom) {
  EXPECT_TRUE(is_gate_row({"rel_l2", 0.1, 0.1, true, "gaussian"}));
  EXPECT_TRUE(is_gate_row({"top32", 0.9, 0.5, true, "npy:keys.npy"}));
  EXPECT_FALSE(is_gate_row({"rel_l2", 0.1, 0.1, true, "random"}));
  EXPECT_FALSE(is_gate_row({"rel_l2", 0.1, 0.1, true, ""}));
  EXPECT_FALSE(is_gate_row({"kernel_check_rel_l2", 0.1, 0.1, true, "gaussian"}));
  EXPECT_FALSE(is_gate_row({"kl_attention", 0.1, 0.1, true, "gaussian"}));
  for (GateMetric m : kGateMetrics) EXPECT_EQ(parse_gate_metric(to_string(m)), m);
  EXPECT_TRUE(gate_metric_at_least(GateMetric::top8));
  EXPECT_FALSE(gate_metric_at_least(GateMetric::kl));
  EXPECT_TRUE(gate_results(kernel_check_case(1)).empty());
}

TEST(GateTable, CellsShowTheLargestContextsCase) {
  const GateTable t = build_gate_table(two_by_two());
  EXPECT_EQ(t.distributions, (std::vector<std::string>{"gaussian", "qwen_bias"}));
  ASSERT_EQ(t.rows.size(), 2u);  // the kernel-check case has no row
  EXPECT_EQ(t.rows[0].label, kPlain);
  EXPECT_EQ(t.rows[1].label, kPrebias);
  EXPECT_EQ(t.rows[0].key.backend, "gate");
  EXPECT_TRUE(t.problems.empty());

  const GateCell* plain_qwen = t.rows[0].cell("qwen_bias");
  ASSERT_NE(plain_qwen, nullptr);
  EXPECT_EQ(plain_qwen->shown.case_id, 3);  // S=4096 over S=1024 (case 4), though stored first
  EXPECT_EQ(plain_qwen->case_ids, (std::vector<std::int64_t>{4, 3}));
  const GateCaseResult& r = plain_qwen->shown;
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.distribution, "qwen_bias");
  EXPECT_EQ(r.representation, kPlain);
  EXPECT_EQ(r.context(), 4096);
  EXPECT_EQ(r.seed, std::optional<std::uint64_t>(1));
  EXPECT_EQ(r.steps, 0);
  EXPECT_EQ(r.rows_checked, 16);
  EXPECT_EQ(r.rows_total, 16);
  EXPECT_TRUE(r.has_gate_json);
  const GateMetricResult& rel = r.metric(GateMetric::rel_l2);
  EXPECT_TRUE(rel.stored);
  EXPECT_DOUBLE_EQ(rel.worst, 0.3);
  EXPECT_DOUBLE_EQ(rel.median, 0.25);
  EXPECT_DOUBLE_EQ(rel.threshold, 0.1);
  EXPECT_FALSE(rel.passed);
  EXPECT_FALSE(r.metric(GateMetric::kl).passed);      // 0.06 > 0.005
  EXPECT_FALSE(r.metric(GateMetric::top8).passed);    // 0.375 < 0.5
  EXPECT_TRUE(r.metric(GateMetric::top32).passed);    // 0.6 >= 0.5
  EXPECT_TRUE(r.metric(GateMetric::max_abs).passed);  // not gated
  EXPECT_TRUE(std::isnan(r.metric(GateMetric::max_abs).threshold));
  EXPECT_DOUBLE_EQ(r.metric(GateMetric::max_abs).worst, 1.5);

  const GateCell* plain_gauss = t.rows[0].cell("gaussian");
  ASSERT_NE(plain_gauss, nullptr);
  EXPECT_EQ(plain_gauss->shown.case_id, 2);
  EXPECT_TRUE(plain_gauss->shown.passed);
  EXPECT_DOUBLE_EQ(plain_gauss->shown.metric(GateMetric::top8).worst, 0.75);

  const GateCell* prebias_qwen = t.rows[1].cell("qwen_bias");
  ASSERT_NE(prebias_qwen, nullptr);
  EXPECT_TRUE(prebias_qwen->shown.passed);
  EXPECT_EQ(prebias_qwen->case_ids, std::vector<std::int64_t>{5});
  EXPECT_EQ(t.row(kPrebias), &t.rows[1]);
  EXPECT_EQ(t.row("k16v8"), nullptr);
}

TEST(GateTable, ErrorAgainstContextKeepsEveryCase) {
  const GateTable t = build_gate_table(two_by_two());
  const std::vector<GateCaseResult>& qwen = t.rows[0].context_series.at("qwen_bias");
  ASSERT_EQ(qwen.size(), 2u);
  EXPECT_EQ(qwen[0].context(), 1024);
  EXPECT_DOUBLE_EQ(qwen[0].metric(GateMetric::rel_l2).worst, 0.2);
  EXPECT_DOUBLE_EQ(qwen[0].metric(GateMetric::kl).worst, 0.03);
  EXPECT_FALSE(qwen[0].passed);  // kl 0.03 > 0.005 although top8 0.5 meets its floor
  EXPECT_TRUE(qwen[0].metric(GateMetric::top8).passed);
  EXPECT_EQ(qwen[1].context(), 4096);
  EXPECT_DOUBLE_EQ(qwen[1].metric(GateMetric::rel_l2).worst, 0.3);
  const std::vector<GateCaseResult>& gauss = t.rows[0].context_series.at("gaussian");
  ASSERT_EQ(gauss.size(), 2u);
  EXPECT_EQ(gauss[0].case_id, 1);
  EXPECT_EQ(gauss[1].case_id, 2);
  EXPECT_TRUE(gauss[0].passed && gauss[1].passed);
  EXPECT_EQ(t.rows[1].context_series.at("gaussian").size(), 1u);
}

TEST(GateTable, EqualContextsShowTheLastStoredAndKeepBoth) {
  const std::vector<CaseSummary> cases = {
      gate_case(11, representation(KRepr::plain, 4096), "gaussian", kGood, kGoodMedian, /*seed=*/2),
      gate_case(10, representation(KRepr::plain, 4096), "gaussian", kBad, kBadMedian, /*seed=*/1)};
  const GateTable t = build_gate_table(cases);
  ASSERT_EQ(t.rows.size(), 1u);
  const GateCell& cell = *t.rows[0].cell("gaussian");
  EXPECT_EQ(cell.shown.case_id, 11);
  EXPECT_EQ(cell.shown.seed, std::optional<std::uint64_t>(2));
  EXPECT_EQ(cell.case_ids, (std::vector<std::int64_t>{10, 11}));
  EXPECT_EQ(t.rows[0].context_series.at("gaussian").size(), 2u);
}

// Cases listed out of order, half of them with results on two distributions: each series
// holds every case's own result (its metrics, its distribution) by context, then case id.
TEST(GateTable, SeriesHoldEachCasesOwnResultByContextThenCaseId) {
  std::vector<CaseSummary> cases;
  for (int i = 0; i < 12; ++i) {
    const std::int64_t id = 40 - 3 * i;
    const int context = 1024 << ((i * 5) % 3);
    const Metrics worst{id / 1000.0, 0.2, 5e-4, 0.875, 0.9};
    CaseSummary c = gate_case(id, representation(KRepr::plain, context), "gaussian", worst, kGoodMedian);
    if (i % 2 == 0) {
      const CaseSummary qwen = gate_case(id, representation(KRepr::plain, context), "qwen_bias",
                                         {id / 100.0, 0.2, 5e-4, 0.875, 0.9}, kGoodMedian);
      c.record.quality.insert(c.record.quality.begin(), qwen.record.quality.begin(), qwen.record.quality.end());
    }
    cases.push_back(c);
  }
  const GateTable t = build_gate_table(cases);
  ASSERT_EQ(t.rows.size(), 1u);
  const auto& series = t.rows[0].context_series;
  ASSERT_EQ(series.at("gaussian").size(), 12u);
  ASSERT_EQ(series.at("qwen_bias").size(), 6u);
  for (const auto& [distribution, results] : series) {
    SCOPED_TRACE(distribution);
    const double scale = distribution == "gaussian" ? 1000.0 : 100.0;
    for (std::size_t i = 0; i < results.size(); ++i) {
      EXPECT_EQ(results[i].distribution, distribution);
      EXPECT_DOUBLE_EQ(results[i].metric(GateMetric::rel_l2).worst, results[i].case_id / scale);
      if (i > 0) {
        EXPECT_LT(std::tuple(results[i - 1].context(), results[i - 1].case_id),
                  std::tuple(results[i].context(), results[i].case_id));
      }
    }
  }
}

// A gate.json as GateResult::to_json() writes it, with `steps` decode steps whose rel_l2
// grows by 0.01 a step from 0.04 and whose last step fails kl.
std::string steps_json(int context, int steps) {
  quality::GateResult r;
  r.distribution = "qwen_bias";
  r.representation = kPrebias;
  r.settings.op = representation(KRepr::prebias, context);
  r.settings.steps = steps;
  for (int i = 1; i <= steps; ++i) {
    quality::GateStep s;
    s.step = i;
    s.tokens = context + i;
    s.metrics.rel_l2 = {0.03 + 0.01 * i, 0.02};
    s.metrics.max_abs = {0.1 * i, 0.05};
    s.metrics.kl = {i == steps ? 0.02 : 1e-3, 5e-4};
    s.metrics.top8 = {0.875, 1};
    s.metrics.top32 = {0.9, 1};
    s.metrics.rows.resize(1);  // judge() fails a step with no rows
    s.verdict = numerics::judge(s.metrics, r.settings.thresholds);
    r.steps.push_back(s);
  }
  return r.to_json().dump();
}

TEST(GateTable, ErrorAgainstDecodeStepFromTheArtifact) {
  std::vector<CaseSummary> cases = two_by_two();
  cases.push_back(gate_case(20, representation(KRepr::prebias, 1024), "qwen_bias", {0.06, 0.3, 0.02, 0.875, 0.9},
                            kGoodMedian, 1, /*steps=*/3));
  std::vector<std::int64_t> asked;
  const GateTable t = build_gate_table(cases, [&](std::int64_t id) -> std::optional<std::string> {
    asked.push_back(id);
    return steps_json(1024, 3);
  });
  EXPECT_EQ(asked, std::vector<std::int64_t>{20});  // only the case run with steps
  const GateRow& prebias = *t.row(kPrebias);
  ASSERT_EQ(prebias.step_series.size(), 1u);
  const GateStepSeries& s = prebias.step_series[0];
  EXPECT_EQ(s.result.case_id, 20);
  EXPECT_EQ(s.result.steps, 3);
  ASSERT_EQ(s.points.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(s.points[i].step, i + 1);
    EXPECT_EQ(s.points[i].tokens, 1024 + i + 1);
    EXPECT_NEAR(s.points[i].value(GateMetric::rel_l2), 0.04 + 0.01 * i, 1e-12);
    EXPECT_NEAR(s.points[i].value(GateMetric::max_abs), 0.1 * (i + 1), 1e-12);
    EXPECT_DOUBLE_EQ(s.points[i].median[static_cast<std::size_t>(GateMetric::rel_l2)], 0.02);
  }
  EXPECT_TRUE(s.points[0].passed);
  EXPECT_FALSE(s.points[2].passed);  // kl 0.02 > 0.005
  EXPECT_DOUBLE_EQ(s.points[2].value(GateMetric::kl), 0.02);
  // The S=4096 case without steps is still the cell's; the steps case joins the context series.
  EXPECT_EQ(prebias.cell("qwen_bias")->shown.case_id, 5);
  EXPECT_EQ(prebias.context_series.at("qwen_bias").size(), 2u);
  EXPECT_TRUE(t.row(kPlain)->step_series.empty());

  // Without a reader there are no step series until they are added; a bad artifact is a
  // problem, not an exception.
  GateTable added = build_gate_table(cases);
  EXPECT_TRUE(added.row(kPrebias)->step_series.empty());
  add_step_series(added, [&](std::int64_t) -> std::optional<std::string> { return steps_json(1024, 3); });
  ASSERT_EQ(added.row(kPrebias)->step_series.size(), 1u);
  EXPECT_EQ(added.row(kPrebias)->step_series[0].result.case_id, 20);
  EXPECT_EQ(added.row(kPrebias)->step_series[0].points.size(), 3u);
  EXPECT_TRUE(added.row(kPlain)->step_series.empty());
  const GateTable bad = build_gate_table(cases, [](std::int64_t) { return std::optional<std::string>("{}"); });
  EXPECT_TRUE(bad.row(kPrebias)->step_series.empty());
  ASSERT_EQ(bad.problems.size(), 1u);
  EXPECT_NE(bad.problems[0].find("case 20"), std::string::npos);
  EXPECT_THROW(parse_gate_steps("not json"), std::runtime_error);
}

TEST(GateTable, RowsNameTheSourceAndTheShapeWhenTheyDiffer) {
  // A speed run's own gate rows (the kernel's output on its inputs) and a D=64 gate case.
  analysis_test::CaseBuilder speed(30, representation(KRepr::plain, 8192));
  speed.c.record.quality = {{"rel_l2", 0.045, 0.1, true, "gaussian"},
                            {"kl", 7e-4, 0.005, true, "gaussian"},
                            {"rel_l2", 0.002, 0.006, true, "random"}};
  const std::vector<CaseSummary> cases = {
      gate_case(1, representation(KRepr::plain, 4096), "gaussian", kGood, kGoodMedian),
      gate_case(2, representation(KRepr::plain, 4096, 64), "gaussian", kGood, kGoodMedian), speed};
  const GateTable t = build_gate_table(cases);
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.distributions, std::vector<std::string>{"gaussian"});
  const GateRow* cuda = t.row(kPlain + " on cuda, D 128, Hq/Hk 32/8");
  ASSERT_NE(cuda, nullptr);
  const GateCaseResult& r = cuda->cell("gaussian")->shown;
  EXPECT_EQ(r.case_id, 30);
  EXPECT_TRUE(r.metric(GateMetric::rel_l2).stored);
  EXPECT_DOUBLE_EQ(r.metric(GateMetric::rel_l2).worst, 0.045);  // the gate row, not the kernel check's 0.002
  EXPECT_FALSE(r.metric(GateMetric::top8).stored);
  EXPECT_TRUE(std::isnan(r.metric(GateMetric::rel_l2).median));
  EXPECT_EQ(r.rows_checked, -1);
  EXPECT_FALSE(r.seed.has_value());
  EXPECT_NE(t.row(kPlain + ", D 128, Hq/Hk 32/8"), nullptr);
  EXPECT_NE(t.row(kPlain + ", D 64, Hq/Hk 32/8"), nullptr);
}

}  // namespace
}  // namespace tilepath::analysis
