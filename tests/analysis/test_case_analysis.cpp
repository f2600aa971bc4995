// From a stored case to its prediction: unknown stages stay unknown (listed, stored,
// counted as 0 in a lower-bound II), auto splits resolve to the kernel's graph.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/analysis/case_analysis.h"
#include "tests/analysis/analysis_test_cases.h"

namespace tilepath::analysis {
namespace {

using analysis_test::CaseBuilder;
using analysis_test::point;

// A K8/V8 transform/full case measured like the CUDA sweep: loads isolated, the
// compute stages by removal, accum never.
CaseBuilder cuda_like_case() {
  CaseBuilder b(1, point(KvDtype::k8v8, KPath::transform, TransformMode::full));
  b.latency(130).interval(1.85).tile_tokens(64);
  b.cost(Stage::k_load, CostMethod::isolated, 0.9).cost(Stage::v_load, CostMethod::isolated, 0.9);
  b.cost(Stage::k_prep, CostMethod::removed, 0.0125).cost(Stage::qk, CostMethod::removed, -0.0025);
  b.cost(Stage::softmax, CostMethod::removed, 0.0145).cost(Stage::v_prep, CostMethod::removed, 0.025);
  b.cost(Stage::pv, CostMethod::removed, -0.04);
  b.cost(Stage::qk, CostMethod::doubled, 0.3).cost(Stage::pv, CostMethod::doubled, 0.2);
  return b;
}

TEST(CaseAnalysis, ACaseWithoutAnAccumMeasurementListsAccumAsUnknown) {
  const CaseAnalysis a = analyze_case(cuda_like_case().record());
  ASSERT_TRUE(a.prediction.has_value());
  EXPECT_EQ(a.unknown_stages(), std::vector<Stage>{Stage::accum});
  EXPECT_EQ(a.prediction->unknown_stages, std::vector<Stage>{Stage::accum});
  EXPECT_TRUE(a.ii_is_lower_bound());
  // The II counts unknown and below-zero costs as 0: memory busy = k_load + v_load.
  EXPECT_DOUBLE_EQ(a.prediction->ii_us, 1.8);
  EXPECT_EQ(a.prediction->limiting_agent, Agent::memory);
  EXPECT_EQ(a.costs.source_of(Stage::qk), CostSource::removed);  // removed beats doubled

  const nlohmann::json j = a.to_json();
  EXPECT_EQ(j.at("unknown_stages"), nlohmann::json::array({"accum"}));
  EXPECT_EQ(j.at("predicted_ii_us"), 1.8);
  EXPECT_EQ(j.at("measured_ii_us"), 1.85);
  EXPECT_EQ(j.at("limiting_stage"), "k_load");
  bool saw_accum = false;
  for (const auto& line : j.at("stages")) {
    if (line.at("stage") != "accum") continue;
    saw_accum = true;
    EXPECT_TRUE(line.at("cost_us").is_null());
    EXPECT_EQ(line.at("source"), "unknown");
  }
  EXPECT_TRUE(saw_accum);
}

TEST(CaseAnalysis, TheStoredPredictionKeepsAccumUnknown) {
  CaseBuilder b = cuda_like_case();
  const std::optional<PredictionRow> row = prediction_row(analyze_case(b.record()));
  ASSERT_TRUE(row.has_value());
  ASSERT_TRUE(row->unknown_stages.has_value());
  EXPECT_EQ(*row->unknown_stages, std::vector<std::string>{"accum"});
  EXPECT_EQ(row->model, kPredictionModel);
  const nlohmann::json detail = nlohmann::json::parse(row->detail_json);
  EXPECT_EQ(detail.at("unknown_stages"), nlohmann::json::array({"accum"}));
  EXPECT_TRUE(detail.at("stages").at("accum").at("unknown").get<bool>());
  EXPECT_TRUE(detail.at("stages").at("accum").at("cost_us").is_null());
  EXPECT_EQ(detail.at("cost_sources").at("accum"), "unknown");
  EXPECT_TRUE(detail.at("ii_is_lower_bound").get<bool>());

  // Through the store and back: still unknown.
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("tilepath-analysis-" + std::to_string(getpid()) + ".sqlite");
  std::filesystem::remove(path);
  {
    RunStore store = RunStore::open(path.string());
    RunInfo run;
    run.backend = "cuda";
    store.begin_run(run);
    CaseRecord rec = b.record();
    rec.predictions = {*row};
    store.add_case(run.id, rec);
    const CaseRecord back = store.load_case(rec.id);
    ASSERT_EQ(back.predictions.size(), 1u);
    EXPECT_EQ(back.predictions[0].unknown_stages, row->unknown_stages);
  }
  std::filesystem::remove(path);
}

TEST(CaseAnalysis, NothingMeasuredMeansNoPrediction) {
  CaseBuilder b(2, point(KvDtype::k16v16, KPath::k16, TransformMode::none));
  b.latency(244).interval(3.0);
  const CaseAnalysis a = analyze_case(b.record());
  EXPECT_FALSE(a.prediction.has_value());
  EXPECT_FALSE(prediction_row(a).has_value());
  EXPECT_EQ(a.unknown_stages().size(), a.graph.stages().size());
  EXPECT_TRUE(a.to_json().at("predicted_ii_us").is_null());
}

// A variant without ablation kernels (the CUDA wgmma kernels) still has combine's cost when
// it splits: once per step, it says nothing about the tile interval.
TEST(CaseAnalysis, OnlyAOncePerStepCostMeansNoPrediction) {
  CaseBuilder b(3, point(KvDtype::k8v8, KPath::fp8_qk, TransformMode::k_only));
  b.latency(30).interval(2.2).tile_tokens(64).splits_used(4);
  b.cost(Stage::combine, CostMethod::isolated, 3.5);
  const CaseAnalysis a = analyze_case(b.record());
  EXPECT_FALSE(a.prediction.has_value());
  EXPECT_FALSE(prediction_row(a).has_value());
  EXPECT_TRUE(a.to_json().at("predicted_ii_us").is_null());
  b.cost(Stage::k_load, CostMethod::isolated, 0.9);  // one per-tile stage: a lower-bound II
  const CaseAnalysis with_load = analyze_case(b.record());
  ASSERT_TRUE(with_load.prediction.has_value());
  EXPECT_GT(with_load.prediction->ii_us, 0.0);
}

TEST(CaseAnalysis, AutoSplitsTakeTheKernelsSplitCountForTheGraph) {
  CaseBuilder b = cuda_like_case();
  b.splits_used(4);  // op.splits is 0 (auto); the kernel merged 4 splits
  const CaseAnalysis a = analyze_case(b.record());
  EXPECT_TRUE(a.graph.has_stage(Stage::combine));
  EXPECT_EQ(a.unknown_stages(), (std::vector<Stage>{Stage::accum, Stage::combine}));
  EXPECT_EQ(a.op.splits, 0);  // the case's own operating point is unchanged

  // Only a once-per-step stage unknown: the II itself is complete.
  b.cost(Stage::accum, CostMethod::removed, 0.01);
  const CaseAnalysis complete = analyze_case(b.record());
  EXPECT_EQ(complete.unknown_stages(), std::vector<Stage>{Stage::combine});
  EXPECT_FALSE(complete.ii_is_lower_bound());
}

TEST(CaseAnalysis, OverlapEfficiencyUsesTheMeasuredInterval) {
  const CaseAnalysis a = analyze_case(cuda_like_case().record());
  EXPECT_DOUBLE_EQ(a.overlap_efficiency(), overlap_efficiency(*a.prediction, 1.85));
  CaseBuilder unmeasured(3, point(KvDtype::k8v8, KPath::transform, TransformMode::full));
  unmeasured.cost(Stage::qk, CostMethod::removed, 0.1);
  EXPECT_TRUE(std::isnan(analyze_case(unmeasured.record()).overlap_efficiency()));
}

}  // namespace
}  // namespace tilepath::analysis
