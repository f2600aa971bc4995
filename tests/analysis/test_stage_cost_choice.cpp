// The one preference rule for stage costs: isolated > removed > doubled > model,
// unknown when none, per stage of the case's graph.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "core/analysis/stage_cost_choice.h"

namespace tilepath::analysis {
namespace {

OperatingPoint k8v8_transform_full() {
  OperatingPoint op;
  op.kv = KvDtype::k8v8;
  op.k_path = KPath::transform;
  op.mode = TransformMode::full;
  return op;
}

TEST(StageCostChoice, EachMethodBeatsTheOnesAfterIt) {
  const StageGraph graph = StageGraph::build(k8v8_transform_full());
  // qk has all four, softmax all but isolated, pv doubled and model, v_prep only a model.
  const std::vector<StageCostRow> rows = {
      {Stage::qk, CostMethod::model, 4.0},        {Stage::qk, CostMethod::doubled, 3.0},
      {Stage::qk, CostMethod::removed, 2.0},      {Stage::qk, CostMethod::isolated, 1.0},
      {Stage::softmax, CostMethod::model, 4.5},   {Stage::softmax, CostMethod::removed, 2.5},
      {Stage::softmax, CostMethod::doubled, 3.5}, {Stage::pv, CostMethod::model, 4.25},
      {Stage::pv, CostMethod::doubled, 3.25},     {Stage::v_prep, CostMethod::model, 4.125}};
  const ChosenStageCosts chosen = choose_stage_costs(rows, graph);
  EXPECT_EQ(chosen.source_of(Stage::qk), CostSource::isolated);
  EXPECT_EQ(chosen[Stage::qk], 1.0);
  EXPECT_EQ(chosen.source_of(Stage::softmax), CostSource::removed);
  EXPECT_EQ(chosen[Stage::softmax], 2.5);
  EXPECT_EQ(chosen.source_of(Stage::pv), CostSource::doubled);
  EXPECT_EQ(chosen[Stage::pv], 3.25);
  EXPECT_EQ(chosen.source_of(Stage::v_prep), CostSource::model);
  EXPECT_EQ(chosen[Stage::v_prep], 4.125);
  EXPECT_FALSE(chosen.model_only());
}

TEST(StageCostChoice, AStageWithoutARowIsUnknownNeverZero) {
  const StageGraph graph = StageGraph::build(k8v8_transform_full());
  const ChosenStageCosts chosen =
      choose_stage_costs({{Stage::k_load, CostMethod::isolated, 0.9}, {Stage::qk, CostMethod::removed, 0.1}}, graph);
  for (Stage s : graph.stages()) {
    if (s == Stage::k_load || s == Stage::qk) continue;
    EXPECT_EQ(chosen.source_of(s), CostSource::unknown) << to_string(s);
    EXPECT_TRUE(std::isnan(chosen[s])) << to_string(s);
  }
  EXPECT_EQ(chosen.unknown(),
            (std::vector<Stage>{Stage::k_prep, Stage::softmax, Stage::v_load, Stage::v_prep, Stage::pv, Stage::accum}));
  EXPECT_EQ(chosen.sources_json().at("accum"), "unknown");
  EXPECT_EQ(chosen.sources_json().at("k_load"), "isolated");
}

TEST(StageCostChoice, NonFiniteCostsAndStagesOutsideTheGraphAreIgnored) {
  OperatingPoint op = k8v8_transform_full();
  op.kv = KvDtype::k16v16;
  op.k_path = KPath::k16;
  op.mode = TransformMode::none;
  const StageGraph graph = StageGraph::build(op);  // no k_prep, v_prep, q_quant or combine
  const ChosenStageCosts chosen = choose_stage_costs({{Stage::k_prep, CostMethod::isolated, 1.0},
                                                      {Stage::qk, CostMethod::isolated, NAN},
                                                      {Stage::qk, CostMethod::removed, 0.5}},
                                                     graph);
  EXPECT_EQ(chosen.source_of(Stage::k_prep), CostSource::unknown);
  EXPECT_TRUE(std::isnan(chosen[Stage::k_prep]));
  EXPECT_EQ(chosen.source_of(Stage::qk), CostSource::removed);
  EXPECT_FALSE(chosen.sources_json().contains("k_prep"));
}

TEST(StageCostChoice, ModelOnlyWhenEveryKnownCostIsAModel) {
  const StageGraph graph = StageGraph::build(k8v8_transform_full());
  EXPECT_FALSE(choose_stage_costs({}, graph).model_only());
  EXPECT_FALSE(choose_stage_costs({}, graph).any_known());
  EXPECT_TRUE(choose_stage_costs({{Stage::qk, CostMethod::model, 1.0}}, graph).model_only());
  EXPECT_FALSE(choose_stage_costs({{Stage::qk, CostMethod::model, 1.0}, {Stage::pv, CostMethod::removed, 1.0}}, graph)
                   .model_only());
}

}  // namespace
}  // namespace tilepath::analysis
