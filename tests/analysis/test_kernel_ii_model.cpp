// The kernel II model (core/analysis/kernel_ii_model.h) on cases with isolated stage costs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/analysis/kernel_ii_model.h"

using namespace tilepath;
using namespace tilepath::analysis;

namespace {

CaseRecord k8v8_case(TransformMode mode) {
  CaseRecord r;
  r.op.batch = 64;
  r.op.context = 4096;
  r.op.kv = KvDtype::k8v8;
  r.op.k_path = KPath::transform;
  r.op.mode = mode;
  r.op.splits = 0;
  r.kernel.splits = 1;
  r.measurements = {{"tile_tokens", mode == TransformMode::separate_kv ? 128.0 : 64.0, ""},
                    {"read_bandwidth_gbps", 4550, "GB/s"},
                    {"tile_interval_us", 2.5, "us"}};
  return r;
}

void add(CaseRecord& r, Stage s, CostMethod m, double us) { r.stage_costs.push_back({s, m, us}); }

}  // namespace

TEST(KernelIIModel, NoIsolatedCostNoPrediction) {
  CaseRecord r = k8v8_case(TransformMode::full);
  add(r, Stage::qk, CostMethod::removed, 0.1);
  EXPECT_FALSE(predict_kernel_ii(r).has_value());
}

TEST(KernelIIModel, TheRingMeasuredWholeBoundsTheIntervalOfAKernelWithoutStageCosts) {
  // A wgmma case: its load_only ring and the measured interval, no stage measured apart.
  CaseRecord r = k8v8_case(TransformMode::k_only);
  r.op.mma = Mma::wgmma;
  r.measurements.push_back({"tile_interval_load_only_us", 0.8, "us"});
  const auto p = predict_kernel_ii(r);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->memory_source, "load_only");
  EXPECT_DOUBLE_EQ(p->busy_us[static_cast<int>(KernelAgent::memory)], 0.8);
  EXPECT_TRUE(std::isnan(p->busy_us[static_cast<int>(KernelAgent::mma_warps)]));  // unknown, not 0
  EXPECT_DOUBLE_EQ(p->ii_us, 0.8);
  EXPECT_EQ(p->limiting_agent, KernelAgent::memory);
  // Every compute stage is missing (the II is a lower bound); the loads are not: the ring has them.
  for (Stage s : {Stage::qk, Stage::softmax, Stage::pv})
    EXPECT_NE(std::find(p->missing.begin(), p->missing.end(), s), p->missing.end()) << to_string(s);
  for (Stage s : {Stage::k_load, Stage::v_load})
    EXPECT_EQ(std::find(p->missing.begin(), p->missing.end(), s), p->missing.end()) << to_string(s);
  EXPECT_NEAR(p->unexplained_us, 2.5 - 0.8, 1e-12);  // what the compute adds to the ring
  EXPECT_TRUE(p->to_json()["ii_is_lower_bound"].get<bool>());
  // The ring measured whole limits: a drawing of the graph marks both of its loads.
  EXPECT_EQ(p->limit_stages, (std::vector<Stage>{Stage::k_load, Stage::v_load}));
  EXPECT_EQ(p->to_json()["limit_stages"], (nlohmann::json{"k_load", "v_load"}));
}

TEST(KernelIIModel, AWgmmaKernelsIsolatedComputeStagesRunBesideItsRingMeasuredWhole) {
  // A wgmma case at D = 128: the ring's load_only interval and the consumer warpgroup's
  // isolated stages (k_only: no v_prep; no isolated loads).
  CaseRecord r = k8v8_case(TransformMode::k_only);
  r.op.mma = Mma::wgmma;
  r.op.k_path = KPath::fp8_qk;
  r.measurements.push_back({"tile_interval_load_only_us", 1.8, "us"});
  add(r, Stage::qk, CostMethod::isolated, 0.3);
  add(r, Stage::softmax, CostMethod::isolated, 0.5);
  add(r, Stage::pv, CostMethod::isolated, 0.6);
  add(r, Stage::accum, CostMethod::isolated, 0.05);
  auto p = predict_kernel_ii(r);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->missing.empty()) << "every per-tile stage is measured: the II is no lower bound";
  EXPECT_FALSE(p->to_json()["ii_is_lower_bound"].get<bool>());
  EXPECT_DOUBLE_EQ(p->busy_us[static_cast<int>(KernelAgent::mma_warps)], 1.45);
  EXPECT_DOUBLE_EQ(p->ii_us, 1.8);
  EXPECT_EQ(p->limiting_agent, KernelAgent::memory);
  EXPECT_NEAR(p->unexplained_us, 2.5 - 1.8, 1e-12);
  // The same kernel with its compute slower than its ring: the warpgroup limits, at pv.
  r.stage_costs[2].cost_us = 1.4;
  p = predict_kernel_ii(r);
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(p->ii_us, 2.25);
  EXPECT_EQ(p->limiting_agent, KernelAgent::mma_warps);
  EXPECT_EQ(p->limiting_stage, Stage::pv);
  EXPECT_EQ(p->resource, "mma_warp_issue");
  EXPECT_EQ(p->limit_stages, std::vector<Stage>{Stage::pv});
}

TEST(KernelIIModel, TheComputeMeasuredWholeStandsForTheSumOfItsStages) {
  CaseRecord r = k8v8_case(TransformMode::k_only);
  r.op.mma = Mma::wgmma;
  r.op.k_path = KPath::fp8_qk;
  r.measurements.push_back({"tile_interval_load_only_us", 1.8, "us"});
  r.measurements.push_back({"tile_interval_compute_only_us", 2.1, "us"});  // barriers and all: above the sum
  add(r, Stage::qk, CostMethod::isolated, 0.3);
  add(r, Stage::softmax, CostMethod::isolated, 0.5);
  add(r, Stage::pv, CostMethod::isolated, 0.6);
  // accum not measured apart: the compute measured whole needs none of its stages
  auto p = predict_kernel_ii(r);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->compute_source, "compute_only");
  EXPECT_DOUBLE_EQ(p->compute_isolated_sum_us, 1.4);
  EXPECT_DOUBLE_EQ(p->busy_us[static_cast<int>(KernelAgent::mma_warps)], 2.1);
  EXPECT_TRUE(p->missing.empty());
  EXPECT_DOUBLE_EQ(p->ii_us, 2.1);
  EXPECT_EQ(p->limiting_agent, KernelAgent::mma_warps);
  EXPECT_EQ(p->limiting_stage, Stage::pv);  // the largest stage measured apart
  EXPECT_EQ(p->limit_stages, std::vector<Stage>{Stage::pv});
  EXPECT_NEAR(p->unexplained_us, 0.4, 1e-12);
  const nlohmann::json j = p->to_json();
  EXPECT_EQ(j["compute_source"], "compute_only");
  EXPECT_DOUBLE_EQ(j["compute_isolated_sum_us"].get<double>(), 1.4);
  // Without the isolated stages the compute measured whole still gives a prediction.
  r.stage_costs.clear();
  p = predict_kernel_ii(r);
  ASSERT_TRUE(p);
  EXPECT_TRUE(std::isnan(p->compute_isolated_sum_us));
  EXPECT_DOUBLE_EQ(p->ii_us, 2.1);
  // No stage was measured apart: the limit stands for every stage of the consumer warpgroup.
  EXPECT_EQ(p->limit_stages, (std::vector<Stage>{Stage::qk, Stage::softmax, Stage::pv, Stage::accum}));
  // Without it, the mma warps' time is the sum of the stages that were measured.
  r.measurements.pop_back();
  add(r, Stage::qk, CostMethod::isolated, 0.3);
  p = predict_kernel_ii(r);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->compute_source, "isolated stages");
  EXPECT_DOUBLE_EQ(p->busy_us[static_cast<int>(KernelAgent::mma_warps)], 0.3);
}

TEST(KernelIIModel, EveryComputeStageSerialisesOnTheMmaWarpsOfAFullModeKernel) {
  CaseRecord r = k8v8_case(TransformMode::full);
  add(r, Stage::k_load, CostMethod::isolated, 0.9);
  add(r, Stage::v_load, CostMethod::isolated, 0.9);
  add(r, Stage::k_prep, CostMethod::isolated, 0.3);
  add(r, Stage::qk, CostMethod::isolated, 0.4);
  add(r, Stage::softmax, CostMethod::isolated, 0.6);
  add(r, Stage::v_prep, CostMethod::isolated, 0.3);
  add(r, Stage::pv, CostMethod::isolated, 0.4);
  add(r, Stage::accum, CostMethod::isolated, 0.2);
  add(r, Stage::softmax, CostMethod::removed, 0.15);
  const auto p = predict_kernel_ii(r);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->missing.empty());
  EXPECT_DOUBLE_EQ(p->busy_us[static_cast<int>(KernelAgent::memory)], 1.8);
  EXPECT_DOUBLE_EQ(p->busy_us[static_cast<int>(KernelAgent::mma_warps)], 2.2);
  EXPECT_FALSE(p->present[static_cast<int>(KernelAgent::converter_warps)]);  // no converter warps
  EXPECT_DOUBLE_EQ(p->ii_us, 2.2);
  EXPECT_EQ(p->limiting_agent, KernelAgent::mma_warps);
  EXPECT_EQ(p->limiting_stage, Stage::softmax);
  EXPECT_EQ(p->resource, "mma_warp_issue");
  EXPECT_DOUBLE_EQ(p->ii_per_1k_tokens_us, 2.2 * 1000 / 64);
  EXPECT_DOUBLE_EQ(p->hidden_fraction[Stage::softmax], 0.75);  // 1 - 0.15 / 0.6
  EXPECT_FALSE(p->hidden_fraction.has(Stage::qk));             // no removal measured
  EXPECT_NEAR(p->unexplained_us, 0.3, 1e-12);                  // measured 2.5
}

TEST(KernelIIModel, MemoryLimitIsHbmBandwidthOrTooFewBytesInFlight) {
  CaseRecord r = k8v8_case(TransformMode::k_only);
  // B=64, S=4096 K8/V8 at D=128: 256 CTAs of two kv heads, all resident, 32 KB a step
  // (64 tokens x 2 heads x 128 x 2 bytes); at 4550 GB/s a step of all of them takes 1.84 us.
  add(r, Stage::k_load, CostMethod::isolated, 0.95);
  add(r, Stage::v_load, CostMethod::isolated, 0.95);
  add(r, Stage::qk, CostMethod::isolated, 0.2);
  add(r, Stage::softmax, CostMethod::isolated, 0.3);
  add(r, Stage::pv, CostMethod::isolated, 0.2);
  add(r, Stage::accum, CostMethod::isolated, 0.1);
  auto p = predict_kernel_ii(r);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->limiting_agent, KernelAgent::memory);
  EXPECT_EQ(p->limiting_stage, Stage::k_load);  // a tie goes to the first in graph order
  EXPECT_NEAR(p->memory_gbps, 32768.0 * 256 / 1.9 * 1e-3, 1e-6);
  EXPECT_EQ(p->resource, "hbm_bandwidth");  // 4415 GB/s, 97% of the ceiling
  r.stage_costs[0].cost_us = 3.0;           // the same bytes far slower: the ring holds too few
  p = predict_kernel_ii(r);
  EXPECT_EQ(p->resource, "bytes_in_flight");
}

TEST(KernelIIModel, SeparateKvConvertsOnTheConverterWarpsThatOwnTheRing) {
  CaseRecord r = k8v8_case(TransformMode::separate_kv);
  add(r, Stage::k_load, CostMethod::isolated, 0.5);
  add(r, Stage::v_load, CostMethod::isolated, 0.5);
  add(r, Stage::k_prep, CostMethod::isolated, 0.9);
  add(r, Stage::v_prep, CostMethod::isolated, 0.8);
  add(r, Stage::qk, CostMethod::isolated, 0.3);
  add(r, Stage::softmax, CostMethod::isolated, 0.3);
  add(r, Stage::pv, CostMethod::isolated, 0.3);
  // accum not measured: the II is a lower bound
  add(r, Stage::v_prep, CostMethod::removed, 0.2);
  const auto p = predict_kernel_ii(r);
  ASSERT_TRUE(p);
  // The ring's loads (1.0) and the conversions (1.7) take turns on the converter warps.
  EXPECT_DOUBLE_EQ(p->busy_us[static_cast<int>(KernelAgent::converter_warps)], 2.7);
  EXPECT_DOUBLE_EQ(p->ii_us, 2.7);
  EXPECT_EQ(p->limiting_agent, KernelAgent::converter_warps);
  EXPECT_EQ(p->limiting_stage, Stage::k_prep);
  EXPECT_EQ(p->resource, "converter_warps");
  ASSERT_EQ(p->missing.size(), 1u);
  EXPECT_EQ(p->missing[0], Stage::accum);
  EXPECT_DOUBLE_EQ(p->v_hidden_fraction, 0.75);
  EXPECT_EQ(p->tile_tokens, 128);
  EXPECT_TRUE(p->to_json()["ii_is_lower_bound"].get<bool>());
}

TEST(KernelIIModel, AnAgentWithoutAnyIsolatedStageIsUnknownNotIdle) {
  CaseRecord r = k8v8_case(TransformMode::full);
  add(r, Stage::k_load, CostMethod::isolated, 0.9);
  add(r, Stage::v_load, CostMethod::isolated, 0.9);
  const auto p = predict_kernel_ii(r);
  ASSERT_TRUE(p);
  EXPECT_TRUE(std::isnan(p->busy_us[static_cast<int>(KernelAgent::mma_warps)]));
  EXPECT_TRUE(p->to_json()["busy_us"]["mma_warps"].is_null());
  EXPECT_EQ(p->missing.size(), 6u);  // k_prep, qk, softmax, v_prep, pv, accum
  EXPECT_EQ(p->limiting_agent, KernelAgent::memory);
}

TEST(KernelIIModel, TheLoadOnlyKernelMeasuresTheRingWhole) {
  CaseRecord r = k8v8_case(TransformMode::full);
  // Apart, each load has half the bytes in flight and half the L2 footprint: their sum
  // (2.4) is not the ring's time; the load_only kernel's tile interval (1.85) is.
  add(r, Stage::k_load, CostMethod::isolated, 1.2);
  add(r, Stage::v_load, CostMethod::isolated, 1.2);
  add(r, Stage::qk, CostMethod::isolated, 0.5);
  add(r, Stage::softmax, CostMethod::isolated, 0.2);
  add(r, Stage::pv, CostMethod::isolated, 0.3);
  add(r, Stage::accum, CostMethod::isolated, 0.1);
  add(r, Stage::k_prep, CostMethod::isolated, 0.3);
  add(r, Stage::v_prep, CostMethod::isolated, 0.3);
  r.measurements.push_back({"tile_interval_load_only_us", 1.85, "us"});
  auto p = predict_kernel_ii(r);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->memory_source, "load_only");
  EXPECT_DOUBLE_EQ(p->busy_us[static_cast<int>(KernelAgent::memory)], 1.85);
  EXPECT_DOUBLE_EQ(p->ii_us, 1.85);
  EXPECT_EQ(p->limiting_agent, KernelAgent::memory);
  EXPECT_EQ(p->to_json()["memory_source"], "load_only");
  // Without the loads apart the ring is still known: the II is no lower bound.
  r.stage_costs.erase(r.stage_costs.begin(), r.stage_costs.begin() + 2);
  p = predict_kernel_ii(r);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->missing.empty());
  EXPECT_DOUBLE_EQ(p->ii_us, 1.85);
}

TEST(KernelIIModel, SeparateKvRingWaitsLimitTheConverterWarpsOfAMixedDtype) {
  CaseRecord r = k8v8_case(TransformMode::separate_kv);
  r.op.kv = KvDtype::k16v8;
  r.op.k_path = KPath::k16;
  add(r, Stage::k_load, CostMethod::isolated, 1.0);
  add(r, Stage::v_load, CostMethod::isolated, 0.8);
  add(r, Stage::v_prep, CostMethod::isolated, 0.4);
  add(r, Stage::qk, CostMethod::isolated, 0.4);
  add(r, Stage::softmax, CostMethod::isolated, 0.1);
  add(r, Stage::pv, CostMethod::isolated, 0.3);
  add(r, Stage::accum, CostMethod::isolated, 0.05);
  r.measurements.push_back({"tile_interval_load_only_us", 1.4, "us"});
  const auto p = predict_kernel_ii(r);
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(p->busy_us[static_cast<int>(KernelAgent::memory)], 1.4);
  EXPECT_DOUBLE_EQ(p->busy_us[static_cast<int>(KernelAgent::converter_warps)], 1.8);  // 1.4 + 0.4
  EXPECT_DOUBLE_EQ(p->ii_us, 1.8);
  EXPECT_EQ(p->limiting_agent, KernelAgent::converter_warps);
  EXPECT_EQ(p->limiting_stage, Stage::k_load);  // the converter warps mostly wait on K
  EXPECT_EQ(p->resource, "converter_warps");
}
