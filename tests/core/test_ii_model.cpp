#include "core/ii_model.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace tilepath {
namespace {

constexpr double kTol = 1e-12;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

OperatingPoint variant(KvDtype kv, KPath path, TransformMode mode, int splits = 1) {
  OperatingPoint op;
  op.kv = kv;
  op.k_path = path;
  op.mode = mode;
  op.splits = splits;
  return op;
}

// Per-tile costs in µs. Costs are given for every stage, also absent ones, to check
// that a variant's II ignores the stages its graph does not have.
StageCosts costs(double k_load, double k_prep, double qk, double softmax, double v_load, double v_prep, double pv,
                 double accum, double q_quant = kNaN, double combine = kNaN) {
  StageCosts c;
  c[Stage::k_load] = k_load;
  c[Stage::k_prep] = k_prep;
  c[Stage::qk] = qk;
  c[Stage::softmax] = softmax;
  c[Stage::v_load] = v_load;
  c[Stage::v_prep] = v_prep;
  c[Stage::pv] = pv;
  c[Stage::accum] = accum;
  c[Stage::q_quant] = q_quant;
  c[Stage::combine] = combine;
  return c;
}

IIPrediction predict(const OperatingPoint& op, const StageCosts& c) { return predict_ii(StageGraph::build(op), c); }

// Design note formula: II_K8 = max(load K8 (+V), prep K8 + QK, softmax, PV (+accum)).
TEST(IIModel, K8V16TransformFullIsTheDesignNoteII_K8) {
  const auto op = variant(KvDtype::k8v16, KPath::transform, TransformMode::full);
  // load = 1.0 + 1.6 = 2.6; prep+qk = 0.9 + 0.5 = 1.4; softmax 0.7; pv+accum = 0.4 + 0.2 = 0.6
  auto p = predict(op, costs(1.0, 0.9, 0.5, 0.7, 1.6, 5.0, 0.4, 0.2));
  EXPECT_NEAR(p.ii_us, 2.6, kTol);
  EXPECT_EQ(p.limiting_agent, Agent::memory);
  EXPECT_EQ(p.limiting_stage, Stage::v_load);
  // Heavier preparation: prep+qk = 2.4 + 0.5 = 2.9 beats the load.
  p = predict(op, costs(1.0, 2.4, 0.5, 0.7, 1.6, 5.0, 0.4, 0.2));
  EXPECT_NEAR(p.ii_us, 2.9, kTol);
  EXPECT_EQ(p.limiting_agent, Agent::qk_mma);
  EXPECT_EQ(p.limiting_stage, Stage::k_prep);
  EXPECT_NEAR(p.agent_busy_us[static_cast<int>(Agent::memory)], 2.6, kTol);
  EXPECT_NEAR(p.agent_busy_us[static_cast<int>(Agent::pv_mma)], 0.6, kTol);  // v_prep absent: its 5.0 is ignored
}

// Design note formula: II_K16 = max(load K16 (+V), QK, softmax, PV (+accum)).
TEST(IIModel, K16V16IsTheDesignNoteII_K16) {
  const auto op = variant(KvDtype::k16v16, KPath::k16, TransformMode::none);
  // load = 2.0 + 1.6 = 3.6; qk 0.5; softmax 3.7; pv+accum = 0.4 + 0.2 = 0.6; k_prep/v_prep absent
  auto p = predict(op, costs(2.0, 9.0, 0.5, 3.7, 1.6, 9.0, 0.4, 0.2));
  EXPECT_NEAR(p.ii_us, 3.7, kTol);
  EXPECT_EQ(p.limiting_agent, Agent::softmax);
  EXPECT_EQ(p.limiting_stage, Stage::softmax);
  EXPECT_NEAR(p.serial_sum_us, 2.0 + 0.5 + 3.7 + 1.6 + 0.4 + 0.2, kTol);
  EXPECT_NEAR(p.max_stage_us, 3.7, kTol);
}

TEST(IIModel, K8V8ModesMoveThePreparationBetweenAgents) {
  // k_load 1.0, k_prep 0.9, qk 0.5, softmax 0.7, v_load 0.8, v_prep 0.6, pv 0.4, accum 0.2
  const auto c = costs(1.0, 0.9, 0.5, 0.7, 0.8, 0.6, 0.4, 0.2);
  auto busy = [](const IIPrediction& p, Agent a) { return p.agent_busy_us[static_cast<int>(a)]; };

  // full: memory 1.8, qk_mma 1.4, softmax 0.7, pv_mma 0.6 + 0.4 + 0.2 = 1.2
  auto full = predict(variant(KvDtype::k8v8, KPath::transform, TransformMode::full), c);
  EXPECT_NEAR(full.ii_us, 1.8, kTol);
  EXPECT_NEAR(busy(full, Agent::qk_mma), 1.4, kTol);
  EXPECT_NEAR(busy(full, Agent::pv_mma), 1.2, kTol);
  EXPECT_NEAR(busy(full, Agent::transform), 0.0, kTol);

  // k_only: no v_prep, pv_mma = 0.6
  auto k_only = predict(variant(KvDtype::k8v8, KPath::transform, TransformMode::k_only), c);
  EXPECT_NEAR(k_only.ii_us, 1.8, kTol);
  EXPECT_NEAR(busy(k_only, Agent::pv_mma), 0.6, kTol);
  EXPECT_TRUE(std::isnan(k_only.slack_us[Stage::v_prep]));

  // separate_kv: transform 0.9 + 0.6 = 1.5, qk_mma 0.5, pv_mma 0.6
  auto separate = predict(variant(KvDtype::k8v8, KPath::transform, TransformMode::separate_kv), c);
  EXPECT_NEAR(busy(separate, Agent::transform), 1.5, kTol);
  EXPECT_NEAR(busy(separate, Agent::qk_mma), 0.5, kTol);
  EXPECT_NEAR(separate.ii_us, 1.8, kTol);

  // With a slower transform, separate_kv is limited by the transform warps.
  auto slow_prep = costs(1.0, 1.5, 0.5, 0.7, 0.8, 0.6, 0.4, 0.2);
  auto separate_slow = predict(variant(KvDtype::k8v8, KPath::transform, TransformMode::separate_kv), slow_prep);
  EXPECT_NEAR(separate_slow.ii_us, 2.1, kTol);
  EXPECT_EQ(separate_slow.limiting_agent, Agent::transform);
  EXPECT_EQ(separate_slow.limiting_stage, Stage::k_prep);
  // full puts the same 1.5 on the QK warps: 1.5 + 0.5 = 2.0
  auto full_slow = predict(variant(KvDtype::k8v8, KPath::transform, TransformMode::full), slow_prep);
  EXPECT_NEAR(full_slow.ii_us, 2.0, kTol);
  EXPECT_EQ(full_slow.limiting_agent, Agent::qk_mma);
}

TEST(IIModel, K16V8AndFp8Qk) {
  // k16v8 (k16 path, full): memory 2.0 + 0.8 = 2.8, qk 0.5, pv_mma 0.6 + 0.4 + 0.2 = 1.2
  auto k16v8 =
      predict(variant(KvDtype::k16v8, KPath::k16, TransformMode::full), costs(2.0, 0.9, 0.5, 0.7, 0.8, 0.6, 0.4, 0.2));
  EXPECT_NEAR(k16v8.ii_us, 2.8, kTol);
  EXPECT_EQ(k16v8.limiting_stage, Stage::k_load);
  EXPECT_TRUE(std::isnan(k16v8.slack_us[Stage::k_prep]));

  // fp8_qk: no k_prep; q_quant 3.0 is once per step, so not in the II.
  auto fp8 = predict(variant(KvDtype::k8v8, KPath::fp8_qk, TransformMode::full, 4),
                     costs(1.0, 0.9, 1.3, 0.7, 0.8, 0.6, 0.4, 0.2, 3.0, 0.25));
  // memory 1.8, qk_mma 1.3, softmax 0.7, pv_mma 1.2
  EXPECT_NEAR(fp8.ii_us, 1.8, kTol);
  EXPECT_NEAR(fp8.agent_busy_us[static_cast<int>(Agent::qk_mma)], 1.3, kTol);
  EXPECT_NEAR(fp8.once_per_step_us, 3.25, kTol);
  EXPECT_NEAR(fp8.serial_sum_us, 1.0 + 1.3 + 0.7 + 0.8 + 0.6 + 0.4 + 0.2, kTol);
}

TEST(IIModel, OneDominantStageSetsTheII) {
  // A post-RoPE prebias K8/V8 cache in separate_kv has every per-tile stage.
  OperatingPoint op = variant(KvDtype::k8v8, KPath::transform, TransformMode::separate_kv);
  op.k_repr = KRepr::prebias;
  const auto graph = StageGraph::build(op);
  for (Stage dominant : kTileStages) {
    SCOPED_TRACE(std::string(to_string(dominant)));
    ASSERT_TRUE(graph.has_stage(dominant));
    auto c = costs(0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1);
    c[Stage::k_bias] = 0.1;
    c[dominant] = 10.0;
    auto p = predict_ii(graph, c);
    // The dominant stage plus the 0.1 of each other stage sharing its agent.
    const auto sharing = graph.stages_on(graph.agent_of(dominant)).size() - 1;
    EXPECT_NEAR(p.ii_us, 10.0 + 0.1 * static_cast<double>(sharing), kTol);
    EXPECT_EQ(p.limiting_stage, dominant);
    EXPECT_EQ(p.limiting_agent, graph.agent_of(dominant));
  }
  // A stage alone on its agent: the II is exactly that stage.
  auto c = costs(0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1);
  c[Stage::softmax] = 7.25;
  EXPECT_EQ(predict_ii(graph, c).ii_us, 7.25);
}

TEST(IIModel, SlackIsIIMinusTheAgentBusyTime) {
  auto p = predict(variant(KvDtype::k8v8, KPath::transform, TransformMode::full),
                   costs(1.0, 0.9, 0.5, 0.7, 0.8, 0.6, 0.4, 0.2));
  EXPECT_NEAR(p.slack_us[Stage::k_load], 0.0, kTol);
  EXPECT_NEAR(p.slack_us[Stage::v_load], 0.0, kTol);
  EXPECT_NEAR(p.slack_us[Stage::k_prep], 1.8 - 1.4, kTol);
  EXPECT_NEAR(p.slack_us[Stage::qk], 1.8 - 1.4, kTol);
  EXPECT_NEAR(p.slack_us[Stage::softmax], 1.8 - 0.7, kTol);
  EXPECT_NEAR(p.slack_us[Stage::pv], 1.8 - 1.2, kTol);
  EXPECT_TRUE(std::isnan(p.slack_us[Stage::q_quant]));
}

TEST(IIModel, UnknownCostCountsAsZeroAndIsListed) {
  auto c = costs(1.0, kNaN, 0.5, 0.7, 0.8, 0.6, 0.4, 0.2);
  auto p = predict(variant(KvDtype::k8v8, KPath::transform, TransformMode::full), c);
  ASSERT_EQ(p.unknown_stages, std::vector<Stage>{Stage::k_prep});
  EXPECT_NEAR(p.agent_busy_us[static_cast<int>(Agent::qk_mma)], 0.5, kTol);
  EXPECT_NEAR(p.ii_us, 1.8, kTol);
  const nlohmann::json j = p.to_json();
  EXPECT_EQ(j.at("unknown_stages"), nlohmann::json::array({"k_prep"}));
  EXPECT_TRUE(j.at("stages").at("k_prep").at("unknown").get<bool>());
  EXPECT_TRUE(j.at("stages").at("k_prep").at("cost_us").is_null());
  EXPECT_FALSE(j.at("stages").at("qk").at("unknown").get<bool>());
  EXPECT_FALSE(j.at("stages").contains("q_quant"));  // absent, not unknown
  EXPECT_EQ(j.at("limiting_agent"), "memory");
  EXPECT_NEAR(j.at("ii_us").get<double>(), 1.8, kTol);
}

TEST(IIModel, BelowZeroCostCountsAsZeroAndIsListed) {
  // pv measured by removal at -0.2 us/tile (the kernel was no faster without it): the
  // PV agent's busy time is v_prep + accum, not v_prep + accum - 0.2.
  auto c = costs(1.0, 0.3, 0.5, 0.7, 0.8, 0.6, -0.2, 0.4);
  auto p = predict(variant(KvDtype::k8v8, KPath::transform, TransformMode::full), c);
  ASSERT_EQ(p.below_zero_stages, std::vector<Stage>{Stage::pv});
  EXPECT_TRUE(p.unknown_stages.empty());
  EXPECT_EQ(p.cost_us[Stage::pv], 0.0);
  EXPECT_NEAR(p.agent_busy_us[static_cast<int>(Agent::pv_mma)], 0.6 + 0.4, kTol);
  EXPECT_NEAR(p.serial_sum_us, 1.0 + 0.3 + 0.5 + 0.7 + 0.8 + 0.6 + 0.4, kTol);
  const nlohmann::json j = p.to_json();
  EXPECT_EQ(j.at("below_zero_stages"), nlohmann::json::array({"pv"}));
  EXPECT_TRUE(j.at("stages").at("pv").at("below_zero").get<bool>());
  EXPECT_EQ(j.at("stages").at("pv").at("cost_us").get<double>(), 0.0);
  EXPECT_FALSE(j.at("stages").at("qk").at("below_zero").get<bool>());
}

TEST(IIModel, LatencyIsOncePerStepPlusFillPlusIIPerExtraTile) {
  auto p = predict(variant(KvDtype::k8v8, KPath::fp8_qk, TransformMode::full),
                   costs(1.0, 0.9, 0.5, 0.7, 0.8, 0.6, 0.4, 0.2, 0.3));
  // fill: k_load -> qk -> softmax -> pv -> accum = 1.0 + 0.5 + 0.7 + 0.4 + 0.2 = 2.8
  // (v_load -> v_prep -> pv -> accum = 2.0 is shorter)
  EXPECT_NEAR(p.fill_us, 2.8, kTol);
  EXPECT_NEAR(p.ii_us, 1.8, kTol);
  EXPECT_NEAR(p.latency_us(1), 0.3 + 2.8, kTol);
  EXPECT_NEAR(p.latency_us(100), 0.3 + 2.8 + 99 * 1.8, 1e-9);
  EXPECT_NEAR(p.latency_us(0), 0.3, kTol);
}

TEST(IIModel, OverlapEfficiency) {
  auto p =
      predict(variant(KvDtype::k16v16, KPath::k16, TransformMode::none), costs(1.0, 0, 0.5, 0.7, 0.8, 0, 0.4, 0.2));
  // serial = 1.0 + 0.5 + 0.7 + 0.8 + 0.4 + 0.2 = 3.6, max = 1.0
  EXPECT_NEAR(overlap_efficiency(p, 1.0), 1.0, kTol);
  EXPECT_NEAR(overlap_efficiency(p, 3.6), 0.0, kTol);
  EXPECT_NEAR(overlap_efficiency(p, 2.3), (3.6 - 2.3) / 2.6, kTol);
  EXPECT_EQ(overlap_efficiency(p, 0.5), 1.0);  // faster than the largest stage: clamped
  EXPECT_EQ(overlap_efficiency(p, 9.0), 0.0);  // slower than serial: clamped
  EXPECT_TRUE(std::isnan(overlap_efficiency(p, kNaN)));
  // Only one non-zero stage: the denominator is 0.
  auto single = predict(variant(KvDtype::k16v16, KPath::k16, TransformMode::none), costs(0, 0, 0, 2.0, 0, 0, 0, 0));
  EXPECT_TRUE(std::isnan(overlap_efficiency(single, 2.0)));
}

TEST(IIModel, IIWithoutAStage) {
  auto p = predict(variant(KvDtype::k8v8, KPath::transform, TransformMode::full),
                   costs(1.0, 1.6, 0.5, 0.7, 0.8, 0.6, 0.4, 0.2));
  EXPECT_NEAR(p.ii_us, 2.1, kTol);                      // qk_mma 1.6 + 0.5
  EXPECT_NEAR(p.ii_without(Stage::k_prep), 1.8, kTol);  // memory takes over
  EXPECT_NEAR(p.ii_without(Stage::softmax), 2.1, kTol);
  EXPECT_NEAR(p.ii_without(Stage::q_quant), 2.1, kTol);  // absent
}

TEST(IIModel, BreakEvenDecomposition) {
  // K8/V8 full: memory 1.0 + 0.8 = 1.8; qk_mma 1.6 + 0.5 = 2.1 -> II 2.1, without k_prep 1.8
  auto k8v8 = predict(variant(KvDtype::k8v8, KPath::transform, TransformMode::full),
                      costs(1.0, 1.6, 0.5, 0.7, 0.8, 0.6, 0.4, 0.2));
  // K16/V8: memory 2.0 + 0.8 = 2.8
  auto k16v8 =
      predict(variant(KvDtype::k16v8, KPath::k16, TransformMode::full), costs(2.0, 0, 0.5, 0.7, 0.8, 0.6, 0.4, 0.2));
  auto b = break_even(k8v8, 2.5, k16v8, 2.9);
  EXPECT_NEAR(b.delta_us, -0.4, kTol);
  EXPECT_NEAR(b.extra_k16_hbm_us, 1.0, kTol);
  EXPECT_NEAR(b.unhidden_k8_prep_us, 0.3, kTol);
  EXPECT_NEAR(b.pipeline_penalty_us, -0.4 - 0.3 + 1.0, kTol);
  // The decomposition closes: delta = unhidden + penalty - extra HBM
  EXPECT_NEAR(b.unhidden_k8_prep_us + b.pipeline_penalty_us - b.extra_k16_hbm_us, b.delta_us, kTol);
  const nlohmann::json j = b.to_json();
  EXPECT_NEAR(j.at("unhidden_k8_prep_us").get<double>(), 0.3, kTol);

  // Fully hidden preparation: nothing unhidden.
  auto hidden = predict(variant(KvDtype::k8v8, KPath::transform, TransformMode::full),
                        costs(1.0, 0.9, 0.5, 0.7, 0.8, 0.6, 0.4, 0.2));
  EXPECT_EQ(break_even(hidden, 1.9, k16v8, 2.9).unhidden_k8_prep_us, 0.0);
}

TEST(IIModel, VHiddenFraction) {
  // full delta = 60 - 100 = -40; V-only delta = 80 - 100 = -20 -> 1 - 0.5
  EXPECT_NEAR(v_hidden_fraction(100, 80, 60), 0.5, kTol);
  EXPECT_NEAR(v_hidden_fraction(100, 100, 60), 1.0, kTol);
  EXPECT_NEAR(v_hidden_fraction(100, 60, 60), 0.0, kTol);
  EXPECT_EQ(v_hidden_fraction(100, 110, 60), 1.0);  // 1.25 clamped
  EXPECT_EQ(v_hidden_fraction(100, 40, 60), 0.0);   // -0.5 clamped
  EXPECT_TRUE(std::isnan(v_hidden_fraction(100, 80, 100)));
  EXPECT_TRUE(std::isnan(v_hidden_fraction(100, kNaN, 60)));
}

}  // namespace
}  // namespace tilepath
