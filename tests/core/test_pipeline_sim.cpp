#include "core/pipeline_sim.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/ii_model.h"

namespace tilepath {
namespace {

constexpr double kTol = 1e-9;

OperatingPoint variant(KvDtype kv, KPath path, TransformMode mode, int splits = 1) {
  OperatingPoint op;
  op.kv = kv;
  op.k_path = path;
  op.mode = mode;
  op.splits = splits;
  return op;
}

// Every valid (kv, k_path, mode) of the operating point, plus a split-KV case.
std::vector<OperatingPoint> all_variants() {
  std::vector<OperatingPoint> out;
  for (auto kv : {KvDtype::k16v16, KvDtype::k8v16, KvDtype::k16v8, KvDtype::k8v8})
    for (auto path : valid_k_paths(kv))
      for (auto mode : valid_modes(kv, path)) out.push_back(variant(kv, path, mode));
  out.push_back(variant(KvDtype::k8v8, KPath::fp8_qk, TransformMode::full, 4));
  return out;
}

StageCosts costs(double k_load, double k_prep, double qk, double softmax, double v_load, double v_prep, double pv,
                 double accum, double q_quant = 0.5, double combine = 0.3) {
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

// A few cost profiles: memory bound, preparation bound, softmax bound, PV bound.
std::vector<StageCosts> cost_profiles() {
  return {costs(1.0, 0.9, 0.5, 0.7, 0.8, 0.6, 0.4, 0.2), costs(0.6, 1.7, 0.5, 0.4, 0.5, 1.1, 0.4, 0.1),
          costs(0.3, 0.2, 0.25, 1.3, 0.3, 0.2, 0.3, 0.1), costs(0.4, 0.3, 0.2, 0.3, 0.4, 0.9, 0.8, 0.3)};
}

const ScheduledStage& find(const PipelineSchedule& s, Stage stage, int tile) {
  for (const auto& x : s.stages)
    if (x.stage == stage && x.tile == tile) return x;
  throw std::runtime_error("stage instance not scheduled");
}

bool overlaps(const ScheduledStage& a, const ScheduledStage& b) {
  return a.start_us < b.end_us - kTol && b.start_us < a.end_us - kTol;
}

TEST(PipelineSim, TwoTilesByHand) {
  // k16v16, every stage 1 µs, N = 2 (the depth-2 buffer edges reach past the last tile).
  auto g = StageGraph::build(variant(KvDtype::k16v16, KPath::k16, TransformMode::none), 2);
  auto s = simulate_pipeline(g, costs(1, 1, 1, 1, 1, 1, 1, 1), 2);
  // memory: k_load0 [0,1] v_load0 [1,2] k_load1 [2,3] v_load1 [3,4]
  EXPECT_EQ(find(s, Stage::v_load, 0).start_us, 1.0);
  EXPECT_EQ(find(s, Stage::k_load, 1).start_us, 2.0);
  // qk1 waits for k_load1; softmax1 for qk1; pv1 for softmax1 and accum0 (both end at 5)
  EXPECT_EQ(find(s, Stage::qk, 1).start_us, 3.0);
  EXPECT_EQ(find(s, Stage::softmax, 1).start_us, 4.0);
  EXPECT_EQ(find(s, Stage::pv, 0).start_us, 3.0);
  EXPECT_EQ(find(s, Stage::accum, 0).end_us, 5.0);
  EXPECT_EQ(find(s, Stage::pv, 1).start_us, 5.0);
  EXPECT_EQ(s.makespan_us, 7.0);
  EXPECT_EQ(s.serial_sum_us, 12.0);
  EXPECT_NEAR(s.overlap_fraction, 1.0 - 7.0 / 12.0, kTol);
  EXPECT_NEAR(s.steady_ii_us, 2.0, kTol);  // accum ends at 5 and 7
  std::set<std::pair<Stage, int>> critical;
  for (const auto& x : s.stages)
    if (x.critical) critical.insert({x.stage, x.tile});
  EXPECT_EQ(critical, (std::set<std::pair<Stage, int>>{{Stage::k_load, 0},
                                                       {Stage::v_load, 0},
                                                       {Stage::k_load, 1},
                                                       {Stage::qk, 1},
                                                       {Stage::softmax, 1},
                                                       {Stage::pv, 1},
                                                       {Stage::accum, 1}}));
}

TEST(PipelineSim, ScheduleRespectsAgentsAndDependencies) {
  for (const auto& op : all_variants()) {
    SCOPED_TRACE(op.variant_label());
    auto g = StageGraph::build(op, 2);
    const int n = 12;
    auto s = simulate_pipeline(g, cost_profiles()[0], n);
    // Every instance is scheduled once: per-tile stages n times, once-per-step stages once.
    size_t per_tile = 0, once = 0;
    for (Stage st : g.stages()) (st == Stage::q_quant || st == Stage::combine ? once : per_tile) += 1;
    EXPECT_EQ(s.stages.size(), per_tile * n + once);
    EXPECT_TRUE(std::is_sorted(s.stages.begin(), s.stages.end(),
                               [](const auto& a, const auto& b) { return a.start_us < b.start_us; }));
    // One instance at a time per agent.
    for (size_t i = 0; i < s.stages.size(); ++i)
      for (size_t j = i + 1; j < s.stages.size(); ++j)
        if (s.stages[i].agent == s.stages[j].agent) {
          EXPECT_FALSE(overlaps(s.stages[i], s.stages[j]));
        }
    // Data, loop-carried and buffer edges hold in the unrolled schedule.
    const auto& bg = g.graph();
    for (auto e : boost::make_iterator_range(boost::edges(bg))) {
      const auto& from = bg[boost::source(e, bg)];
      const auto& to = bg[boost::target(e, bg)];
      const int d = bg[e].tile_distance;
      if (!from.per_tile) {
        for (int t = 0; t < n; ++t) EXPECT_LE(find(s, from.stage, -1).end_us, find(s, to.stage, t).start_us + kTol);
      } else if (!to.per_tile) {
        EXPECT_LE(find(s, from.stage, n - 1).end_us, find(s, to.stage, n).start_us + kTol);
      } else {
        for (int t = 0; t + d < n; ++t)
          EXPECT_LE(find(s, from.stage, t).end_us, find(s, to.stage, t + d).start_us + kTol);
      }
    }
    // Critical path: a gap-free chain from 0 to the makespan.
    std::vector<ScheduledStage> critical;
    for (const auto& x : s.stages)
      if (x.critical) critical.push_back(x);
    ASSERT_FALSE(critical.empty());
    EXPECT_EQ(critical.front().start_us, 0.0);
    EXPECT_NEAR(critical.back().end_us, s.makespan_us, kTol);
    for (size_t i = 1; i < critical.size(); ++i) EXPECT_NEAR(critical[i].start_us, critical[i - 1].end_us, kTol);
    EXPECT_NEAR(s.overlap_fraction, 1.0 - s.makespan_us / s.serial_sum_us, kTol);
  }
}

TEST(PipelineSim, OncePerStepStagesBracketTheLoop) {
  auto g = StageGraph::build(variant(KvDtype::k8v8, KPath::fp8_qk, TransformMode::full, 4), 2);
  auto s = simulate_pipeline(g, cost_profiles()[0], 8);
  const auto& q_quant = find(s, Stage::q_quant, -1);
  const auto& combine = find(s, Stage::combine, 8);
  EXPECT_EQ(q_quant.start_us, 0.0);
  for (const auto& x : s.stages) {
    if (x.stage == Stage::qk) {
      EXPECT_GE(x.start_us, q_quant.end_us);
    }
    if (x.tile >= 0 && x.tile < 8) {
      EXPECT_LE(x.end_us, combine.start_us + kTol);
    }
  }
  EXPECT_NEAR(combine.end_us, s.makespan_us, kTol);
  EXPECT_TRUE(combine.critical);
  // serial sum = 8 tiles of the per-tile stages + q_quant + combine
  const double per_tile = 1.0 + 0.5 + 0.7 + 0.8 + 0.6 + 0.4 + 0.2;  // no k_prep on fp8_qk
  EXPECT_NEAR(s.serial_sum_us, 8 * per_tile + 0.5 + 0.3, kTol);
}

TEST(PipelineSim, OneDominantStageSetsTheSteadyII) {
  auto g = StageGraph::build(variant(KvDtype::k8v8, KPath::transform, TransformMode::separate_kv), 4);
  for (Stage dominant : {Stage::qk, Stage::softmax}) {  // each alone on its agent
    auto c = costs(0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1);
    c[dominant] = 5.0;
    auto s = simulate_pipeline(g, c, 32);
    EXPECT_NEAR(s.steady_ii_us, 5.0, kTol) << to_string(dominant);
  }
}

TEST(PipelineSim, BufferDepthOneAllowsNoLoadComputeOverlap) {
  for (auto kv : {KvDtype::k8v8, KvDtype::k16v16}) {
    auto op = variant(kv, kv == KvDtype::k8v8 ? KPath::transform : KPath::k16,
                      kv == KvDtype::k8v8 ? TransformMode::full : TransformMode::none);
    SCOPED_TRACE(op.variant_label());
    auto g = StageGraph::build(op, 1);
    for (const auto& c : cost_profiles()) {
      auto s = simulate_pipeline(g, c, 16);
      for (const auto& load : s.stages) {
        if (load.stage != Stage::k_load && load.stage != Stage::v_load) continue;
        for (const auto& use : s.stages) {
          if (use.tile == load.tile) continue;
          const bool k_reader = use.stage == Stage::k_prep || use.stage == Stage::qk;
          const bool v_reader = use.stage == Stage::v_prep || use.stage == Stage::pv;
          if ((load.stage == Stage::k_load && k_reader) || (load.stage == Stage::v_load && v_reader)) {
            EXPECT_FALSE(overlaps(load, use))
                << to_string(load.stage) << load.tile << " vs " << to_string(use.stage) << use.tile;
          }
        }
      }
      // Single buffering can only slow the pipeline down relative to the agent bound.
      EXPECT_GE(s.steady_ii_us, predict_ii(g, c).ii_us - kTol);
    }
  }
}

TEST(PipelineSim, BufferDepthOneSerialisesEachLoadWithItsSlotReaders) {
  // Readers per slot come from the graph: in separate_kv the transform warps read the
  // FP8 slots and the MMAs read the staged BF16 tiles.
  for (const auto& op : all_variants()) {
    SCOPED_TRACE(op.variant_label());
    auto g = StageGraph::build(op, 1);
    auto s = simulate_pipeline(g, cost_profiles()[1], 12);
    for (auto [reader, slot_owner] : g.edges(EdgeKind::buffer_reuse)) {
      for (const auto& fill : s.stages) {
        if (fill.stage != slot_owner) continue;
        for (const auto& use : s.stages) {
          if (use.stage == reader && use.tile != fill.tile) {
            EXPECT_FALSE(overlaps(fill, use))
                << to_string(fill.stage) << fill.tile << " vs " << to_string(use.stage) << use.tile;
          }
        }
      }
    }
  }
}

TEST(PipelineSim, DoubleBufferingOverlapsLoadsWithCompute) {
  // The contrast to the depth-1 test: with two slots the next K load runs under QK.
  auto op = variant(KvDtype::k16v16, KPath::k16, TransformMode::none);
  auto c = costs(1.0, 0, 1.0, 0.1, 0.1, 0, 0.1, 0.1);
  auto s = simulate_pipeline(StageGraph::build(op, 2), c, 8);
  EXPECT_TRUE(overlaps(find(s, Stage::k_load, 2), find(s, Stage::qk, 1)));
}

TEST(PipelineSim, SingleBufferingCanAlternateIntervals) {
  // k16v16, depth 1: k_load 0.6, qk 0.5, softmax 0.4, v_load 0.5, pv 0.4, accum 0.1.
  // The slowest cycle spans two tiles: v_load(n) -> [memory pipe] k_load(n+1) -> qk ->
  // softmax -> pv(n+1) -> [V slot free] v_load(n+2): (0.5+0.6+0.5+0.4+0.4)/2 = 1.2,
  // so tile intervals alternate (1.1, 1.3) and the steady II is their mean.
  auto g = StageGraph::build(variant(KvDtype::k16v16, KPath::k16, TransformMode::none), 1);
  const auto c = costs(0.6, 0, 0.5, 0.4, 0.5, 0, 0.4, 0.1);
  for (int n : {15, 16, 17, 40}) EXPECT_NEAR(simulate_pipeline(g, c, n).steady_ii_us, 1.2, kTol) << n;
  auto s = simulate_pipeline(g, c, 16);
  const double a = find(s, Stage::accum, 11).end_us - find(s, Stage::accum, 10).end_us;
  const double b = find(s, Stage::accum, 12).end_us - find(s, Stage::accum, 11).end_us;
  EXPECT_NEAR(a + b, 2.4, kTol);
  EXPECT_GT(std::abs(a - b), 0.1);
}

TEST(PipelineSim, SteadyIIDoesNotDependOnTileCount) {
  for (const auto& op : all_variants()) {
    for (int depth : {1, 2, 3}) {
      auto g = StageGraph::build(op, depth);
      for (const auto& c : cost_profiles()) {
        SCOPED_TRACE(op.variant_label() + " depth " + std::to_string(depth));
        const double ii16 = simulate_pipeline(g, c, 16).steady_ii_us;
        EXPECT_NEAR(simulate_pipeline(g, c, 64).steady_ii_us, ii16, kTol);
        EXPECT_NEAR(simulate_pipeline(g, c, 256).steady_ii_us, ii16, kTol);
      }
    }
  }
}

TEST(PipelineSim, DeepBuffersReachTheIIModel) {
  for (const auto& op : all_variants()) {
    auto g = StageGraph::build(op, 64);
    for (const auto& c : cost_profiles()) {
      SCOPED_TRACE(op.variant_label());
      auto s = simulate_pipeline(g, c, 64);
      EXPECT_NEAR(s.steady_ii_us, predict_ii(g, c).ii_us, kTol);
    }
  }
}

TEST(PipelineSim, NaNCostIsTreatedAsZero) {
  auto g = StageGraph::build(variant(KvDtype::k8v8, KPath::transform, TransformMode::full), 2);
  auto c = cost_profiles()[0];
  auto zero = c;
  c[Stage::k_prep] = std::numeric_limits<double>::quiet_NaN();
  zero[Stage::k_prep] = 0;
  EXPECT_EQ(simulate_pipeline(g, c, 10).makespan_us, simulate_pipeline(g, zero, 10).makespan_us);
}

TEST(PipelineSim, BelowZeroCostRunsAsZero) {
  auto g = StageGraph::build(variant(KvDtype::k8v8, KPath::transform, TransformMode::full), 2);
  auto c = cost_profiles()[0];
  auto zero = c;
  c[Stage::pv] = -0.2;
  zero[Stage::pv] = 0;
  const PipelineSchedule with_negative = simulate_pipeline(g, c, 10);
  EXPECT_EQ(with_negative.makespan_us, simulate_pipeline(g, zero, 10).makespan_us);
  for (const ScheduledStage& st : with_negative.stages) EXPECT_GE(st.end_us, st.start_us);
}

TEST(PipelineSim, RejectsNonPositiveTileCount) {
  auto g = StageGraph::build(OperatingPoint{}, 2);
  EXPECT_THROW(simulate_pipeline(g, cost_profiles()[0], 0), ValidationError);
  auto one = simulate_pipeline(g, cost_profiles()[0], 1);
  EXPECT_TRUE(std::isnan(one.steady_ii_us));
  EXPECT_TRUE(one.to_json().at("steady_ii_us").is_null());
}

TEST(PipelineSim, JsonListsEveryInstance) {
  auto g = StageGraph::build(variant(KvDtype::k8v8, KPath::transform, TransformMode::k_only), 2);
  auto s = simulate_pipeline(g, cost_profiles()[1], 5);
  const nlohmann::json j = s.to_json();
  ASSERT_EQ(j.at("stages").size(), s.stages.size());
  EXPECT_EQ(j.at("n_tiles"), 5);
  EXPECT_NEAR(j.at("makespan_us").get<double>(), s.makespan_us, kTol);
  for (size_t i = 0; i < s.stages.size(); ++i) {
    const auto& row = j.at("stages")[i];
    EXPECT_EQ(row.at("stage").get<std::string>(), to_string(s.stages[i].stage));
    EXPECT_EQ(row.at("agent").get<std::string>(), to_string(s.stages[i].agent));
    EXPECT_EQ(row.at("tile").get<int>(), s.stages[i].tile);
    EXPECT_EQ(row.at("start_us").get<double>(), s.stages[i].start_us);
    EXPECT_EQ(row.at("critical").get<bool>(), s.stages[i].critical);
  }
}

}  // namespace
}  // namespace tilepath
