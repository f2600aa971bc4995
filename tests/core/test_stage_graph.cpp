#include "core/stage_graph.h"

#include <algorithm>
#include <map>
#include <set>

#include <gtest/gtest.h>

// The classic Spirit DOT parser is header-only; the default one needs libboost_graph.
#define BOOST_GRAPH_USE_SPIRIT_PARSER
#include <boost/graph/graphviz.hpp>
#include <nlohmann/json.hpp>

namespace tilepath {
namespace {

OperatingPoint variant(KvDtype kv, KPath path, TransformMode mode, int splits = 1) {
  OperatingPoint op;
  op.kv = kv;
  op.k_path = path;
  op.mode = mode;
  op.splits = splits;
  return op;
}

std::set<Stage> stage_set(const StageGraph& g) {
  auto s = g.stages();
  return {s.begin(), s.end()};
}

using StagePairs = std::set<std::pair<Stage, Stage>>;
StagePairs edge_set(const StageGraph& g, EdgeKind k) {
  auto e = g.edges(k);
  return {e.begin(), e.end()};
}

int tile_distance_of(const StageGraph& sg, Stage from, Stage to) {
  const auto& g = sg.graph();
  for (auto e : boost::make_iterator_range(boost::edges(g)))
    if (g[boost::source(e, g)].stage == from && g[boost::target(e, g)].stage == to) return g[e].tile_distance;
  return -1;
}

TEST(StageGraph, K16V16HasOnlyTheSixAlwaysPresentStages) {
  auto g = StageGraph::build(variant(KvDtype::k16v16, KPath::k16, TransformMode::none));
  EXPECT_EQ(stage_set(g),
            (std::set<Stage>{Stage::k_load, Stage::qk, Stage::softmax, Stage::v_load, Stage::pv, Stage::accum}));
  EXPECT_EQ(edge_set(g, EdgeKind::data), (StagePairs{{Stage::k_load, Stage::qk},
                                                     {Stage::qk, Stage::softmax},
                                                     {Stage::softmax, Stage::pv},
                                                     {Stage::pv, Stage::accum},
                                                     {Stage::v_load, Stage::pv}}));
}

TEST(StageGraph, PostRopePrebiasAddsKBiasBetweenQkAndSoftmax) {
  OperatingPoint op = variant(KvDtype::k8v8, KPath::fp8_qk, TransformMode::k_only);
  op.k_repr = KRepr::prebias;
  auto g = StageGraph::build(op);
  ASSERT_TRUE(g.has_stage(Stage::k_bias));
  EXPECT_EQ(g.agent_of(Stage::k_bias), Agent::qk_mma);
  const StagePairs data = edge_set(g, EdgeKind::data);
  EXPECT_TRUE(data.count({Stage::qk, Stage::k_bias}));
  EXPECT_TRUE(data.count({Stage::k_bias, Stage::softmax}));
  EXPECT_FALSE(data.count({Stage::qk, Stage::softmax}));
  const auto order = g.stages();
  EXPECT_LT(std::find(order.begin(), order.end(), Stage::qk), std::find(order.begin(), order.end(), Stage::k_bias));

  // Pre-RoPE, the bias is restored into K before the rotation (k_prep); plain and K16 have none.
  op.k_path = KPath::transform;
  op.rope = RopeLayout::pre_rope;
  EXPECT_FALSE(StageGraph::build(op).has_stage(Stage::k_bias));
  op.rope = RopeLayout::post_rope;
  EXPECT_TRUE(StageGraph::build(op).has_stage(Stage::k_bias));
  op.k_repr = KRepr::plain;
  EXPECT_FALSE(StageGraph::build(op).has_stage(Stage::k_bias));
  OperatingPoint k16 = variant(KvDtype::k16v8, KPath::k16, TransformMode::full);
  k16.k_repr = KRepr::prebias;
  EXPECT_FALSE(StageGraph::build(k16).has_stage(Stage::k_bias));
}

TEST(StageGraph, StagePresencePerVariant) {
  struct Row {
    OperatingPoint op;
    bool k_prep, v_prep, q_quant, combine;
  };
  const std::vector<Row> rows = {
      {variant(KvDtype::k8v16, KPath::transform, TransformMode::full), true, false, false, false},
      {variant(KvDtype::k16v8, KPath::k16, TransformMode::full), false, true, false, false},
      {variant(KvDtype::k16v8, KPath::k16, TransformMode::separate_kv), false, true, false, false},
      {variant(KvDtype::k8v8, KPath::fp8_qk, TransformMode::k_only), false, false, true, false},
      {variant(KvDtype::k8v8, KPath::transform, TransformMode::full), true, true, false, false},
      {variant(KvDtype::k8v8, KPath::transform, TransformMode::k_only), true, false, false, false},
      {variant(KvDtype::k8v8, KPath::transform, TransformMode::separate_kv), true, true, false, false},
      {variant(KvDtype::k8v8, KPath::fp8_qk, TransformMode::full), false, true, true, false},
      {variant(KvDtype::k8v16, KPath::fp8_qk, TransformMode::none), false, false, true, false},
      {variant(KvDtype::k8v8, KPath::transform, TransformMode::full, 4), true, true, false, true},
      {variant(KvDtype::k8v8, KPath::transform, TransformMode::full, 0), true, true, false, false},  // auto splits
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.op.variant_label() + " splits=" + std::to_string(row.op.splits));
    auto g = StageGraph::build(row.op);
    for (Stage s : {Stage::k_load, Stage::qk, Stage::softmax, Stage::v_load, Stage::pv, Stage::accum})
      EXPECT_TRUE(g.has_stage(s)) << to_string(s);
    EXPECT_EQ(g.has_stage(Stage::k_prep), row.k_prep);
    EXPECT_EQ(g.has_stage(Stage::v_prep), row.v_prep);
    EXPECT_EQ(g.has_stage(Stage::q_quant), row.q_quant);
    EXPECT_EQ(g.has_stage(Stage::combine), row.combine);
    for (Stage s : kTileStages) EXPECT_EQ(g.has_stage(s), stage_present(s, row.op)) << to_string(s);
  }
}

TEST(StageGraph, DefaultAgentsFollowTheTransformMode) {
  auto full = StageGraph::build(variant(KvDtype::k8v8, KPath::transform, TransformMode::full));
  EXPECT_EQ(full.agent_of(Stage::k_load), Agent::memory);
  EXPECT_EQ(full.agent_of(Stage::v_load), Agent::memory);
  EXPECT_EQ(full.agent_of(Stage::k_prep), Agent::qk_mma);
  EXPECT_EQ(full.agent_of(Stage::qk), Agent::qk_mma);
  EXPECT_EQ(full.agent_of(Stage::softmax), Agent::softmax);
  EXPECT_EQ(full.agent_of(Stage::v_prep), Agent::pv_mma);
  EXPECT_EQ(full.agent_of(Stage::pv), Agent::pv_mma);
  EXPECT_EQ(full.agent_of(Stage::accum), Agent::pv_mma);
  EXPECT_EQ(full.stages_on(Agent::memory), (std::vector<Stage>{Stage::k_load, Stage::v_load}));
  EXPECT_EQ(full.stages_on(Agent::pv_mma), (std::vector<Stage>{Stage::v_prep, Stage::pv, Stage::accum}));
  EXPECT_TRUE(full.stages_on(Agent::transform).empty());

  auto k_only = StageGraph::build(variant(KvDtype::k8v8, KPath::transform, TransformMode::k_only));
  EXPECT_EQ(k_only.agent_of(Stage::k_prep), Agent::qk_mma);
  EXPECT_EQ(k_only.stages_on(Agent::pv_mma), (std::vector<Stage>{Stage::pv, Stage::accum}));

  auto separate = StageGraph::build(variant(KvDtype::k8v8, KPath::transform, TransformMode::separate_kv));
  EXPECT_EQ(separate.stages_on(Agent::transform), (std::vector<Stage>{Stage::k_prep, Stage::v_prep}));
  EXPECT_EQ(separate.stages_on(Agent::qk_mma), (std::vector<Stage>{Stage::qk}));

  auto fp8_qk = StageGraph::build(variant(KvDtype::k8v8, KPath::fp8_qk, TransformMode::full, 2));
  EXPECT_EQ(fp8_qk.agent_of(Stage::q_quant), Agent::qk_mma);
  EXPECT_EQ(fp8_qk.agent_of(Stage::combine), Agent::pv_mma);
  // Once-per-step stages are not per-tile work of any agent.
  EXPECT_EQ(fp8_qk.stages_on(Agent::qk_mma), (std::vector<Stage>{Stage::qk}));
}

TEST(StageGraph, AgentOfAbsentStageThrowsNamingTheStage) {
  auto g = StageGraph::build(variant(KvDtype::k16v16, KPath::k16, TransformMode::none));
  try {
    g.agent_of(Stage::k_prep);
    FAIL() << "expected ValidationError";
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("k_prep"), std::string::npos) << e.what();
  }
}

TEST(StageGraph, BufferDepthBelowOneIsRejected) {
  EXPECT_THROW(StageGraph::build(OperatingPoint{}, 0), ValidationError);
}

TEST(StageGraph, K8V8FullEdges) {
  auto g = StageGraph::build(variant(KvDtype::k8v8, KPath::transform, TransformMode::full), 3);
  EXPECT_EQ(edge_set(g, EdgeKind::data), (StagePairs{{Stage::k_load, Stage::k_prep},
                                                     {Stage::k_prep, Stage::qk},
                                                     {Stage::qk, Stage::softmax},
                                                     {Stage::softmax, Stage::pv},
                                                     {Stage::pv, Stage::accum},
                                                     {Stage::v_load, Stage::v_prep},
                                                     {Stage::v_prep, Stage::pv}}));
  EXPECT_EQ(edge_set(g, EdgeKind::loop_carried),
            (StagePairs{{Stage::softmax, Stage::softmax}, {Stage::accum, Stage::accum}}));
  EXPECT_EQ(tile_distance_of(g, Stage::softmax, Stage::softmax), 1);
  EXPECT_EQ(tile_distance_of(g, Stage::accum, Stage::accum), 1);
  // In full, the MMA warps read the FP8 slots themselves: qk frees K, pv frees V.
  EXPECT_EQ(edge_set(g, EdgeKind::buffer_reuse), (StagePairs{{Stage::qk, Stage::k_load}, {Stage::pv, Stage::v_load}}));
  EXPECT_EQ(tile_distance_of(g, Stage::qk, Stage::k_load), 3);
  EXPECT_EQ(tile_distance_of(g, Stage::pv, Stage::v_load), 3);
  EXPECT_EQ(tile_distance_of(g, Stage::k_load, Stage::k_prep), 0);
}

TEST(StageGraph, SeparateKvStagesBf16TilesWithTheirOwnRing) {
  auto g = StageGraph::build(variant(KvDtype::k8v8, KPath::transform, TransformMode::separate_kv), 2);
  EXPECT_EQ(edge_set(g, EdgeKind::buffer_reuse), (StagePairs{{Stage::k_prep, Stage::k_load},
                                                             {Stage::v_prep, Stage::v_load},
                                                             {Stage::qk, Stage::k_prep},
                                                             {Stage::pv, Stage::v_prep}}));
  for (auto [from, to] : g.edges(EdgeKind::buffer_reuse)) EXPECT_EQ(tile_distance_of(g, from, to), 2);
}

TEST(StageGraph, Fp8QkAndSplitKvAddOncePerStepEdges) {
  auto g = StageGraph::build(variant(KvDtype::k8v8, KPath::fp8_qk, TransformMode::full, 8));
  auto data = edge_set(g, EdgeKind::data);
  EXPECT_TRUE(data.count({Stage::q_quant, Stage::qk}));
  EXPECT_TRUE(data.count({Stage::accum, Stage::combine}));
  EXPECT_TRUE(data.count({Stage::k_load, Stage::qk}));  // no k_prep on the FP8 QK path
  EXPECT_TRUE(edge_set(g, EdgeKind::buffer_reuse).count({Stage::qk, Stage::k_load}));
  const auto& bg = g.graph();
  for (auto v : boost::make_iterator_range(boost::vertices(bg)))
    EXPECT_EQ(bg[v].per_tile, bg[v].stage != Stage::q_quant && bg[v].stage != Stage::combine);
}

TEST(StageGraph, StagesAreInTopologicalOrderOfDataEdges) {
  for (auto mode : {TransformMode::full, TransformMode::k_only, TransformMode::separate_kv}) {
    auto g = StageGraph::build(variant(KvDtype::k8v8, KPath::transform, mode, 2));
    auto order = g.stages();
    auto position = [&](Stage s) { return std::find(order.begin(), order.end(), s) - order.begin(); };
    for (auto [from, to] : g.edges(EdgeKind::data)) EXPECT_LT(position(from), position(to));
    EXPECT_LT(position(Stage::k_load), position(Stage::v_load));  // the producer issues K first
    EXPECT_EQ(order.front(), Stage::k_load);
    EXPECT_EQ(order.back(), Stage::combine);
  }
}

// Parses the DOT text back with Boost's own reader: a real digraph with the right shape.
TEST(StageGraph, DotParsesAsDigraphWithExpectedCounts) {
  struct Case {
    OperatingPoint op;
    size_t nodes, edges;
  };
  const std::vector<Case> cases = {
      // 8 nodes; 7 data + 2 loop-carried + 2 buffer reuse
      {variant(KvDtype::k8v8, KPath::transform, TransformMode::full), 8, 11},
      // 6 nodes; 5 data + 2 + 2
      {variant(KvDtype::k16v16, KPath::k16, TransformMode::none), 6, 9},
      // 8 nodes; 7 data + 2 + 4 (K, V and both staged BF16 rings)
      {variant(KvDtype::k8v8, KPath::transform, TransformMode::separate_kv), 8, 13},
      // 9 nodes (q_quant, combine, no k_prep); 6 data + q_quant->qk + accum->combine + 2 + 2
      {variant(KvDtype::k8v8, KPath::fp8_qk, TransformMode::full, 4), 9, 12},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op.variant_label());
    auto sg = StageGraph::build(c.op);
    const std::string dot = sg.to_dot();
    EXPECT_EQ(dot.rfind("digraph", 0), 0u) << dot;

    using Parsed = boost::adjacency_list<
        boost::vecS, boost::vecS, boost::directedS,
        boost::property<boost::vertex_name_t, std::string, boost::property<boost::vertex_color_t, std::string>>,
        boost::property<boost::edge_name_t, std::string>>;
    Parsed parsed;
    boost::dynamic_properties dp(boost::ignore_other_properties);
    dp.property("node_id", boost::get(boost::vertex_name, parsed));
    dp.property("fillcolor", boost::get(boost::vertex_color, parsed));
    dp.property("label", boost::get(boost::edge_name, parsed));
    ASSERT_TRUE(boost::read_graphviz(dot, parsed, dp, "node_id")) << dot;
    EXPECT_EQ(boost::num_vertices(parsed), c.nodes);
    EXPECT_EQ(boost::num_edges(parsed), c.edges);

    // One colour per agent: nodes share a colour exactly when they share an agent.
    std::map<std::string, Agent> agent_of_colour;
    std::set<std::string> colours;
    const auto& g = sg.graph();
    for (auto v : boost::make_iterator_range(boost::vertices(parsed))) {
      const std::string id = boost::get(boost::vertex_name, parsed, v);
      const std::string colour = boost::get(boost::vertex_color, parsed, v);
      const Agent agent = g[std::stoul(id)].agent;
      auto [it, inserted] = agent_of_colour.emplace(colour, agent);
      EXPECT_EQ(it->second, agent) << "colour " << colour << " used by two agents";
      colours.insert(colour);
    }
    std::set<Agent> agents;
    for (auto v : boost::make_iterator_range(boost::vertices(g))) agents.insert(g[v].agent);
    EXPECT_EQ(colours.size(), agents.size());
    size_t buffer_labels = 0;
    for (auto e : boost::make_iterator_range(boost::edges(parsed)))
      buffer_labels += boost::get(boost::edge_name, parsed, e).rfind("buffer_reuse", 0) == 0;
    EXPECT_EQ(buffer_labels, sg.edges(EdgeKind::buffer_reuse).size());
  }
}

TEST(StageGraph, JsonRoundTripKeepsNodesAndEdges) {
  for (auto mode : {TransformMode::full, TransformMode::k_only, TransformMode::separate_kv}) {
    auto original = StageGraph::build(variant(KvDtype::k8v8, KPath::transform, mode, 3), 4);
    const nlohmann::json j = original.to_json();
    SCOPED_TRACE(j.dump());
    EXPECT_EQ(j.at("nodes").size(), boost::num_vertices(original.graph()));
    EXPECT_EQ(j.at("edges").size(), boost::num_edges(original.graph()));
    auto restored = StageGraph::from_json(j);
    EXPECT_EQ(restored.to_json(), j);
    EXPECT_EQ(restored.buffer_depth(), 4);
    EXPECT_EQ(restored.stages(), original.stages());
    for (auto kind : {EdgeKind::data, EdgeKind::loop_carried, EdgeKind::buffer_reuse})
      EXPECT_EQ(restored.edges(kind), original.edges(kind));
    for (Stage s : original.stages()) EXPECT_EQ(restored.agent_of(s), original.agent_of(s));
    EXPECT_EQ(tile_distance_of(restored, Stage::qk, Stage::k_load),
              tile_distance_of(original, Stage::qk, Stage::k_load));
  }
}

TEST(StageGraph, JsonWithUnknownStageNamesTheField) {
  nlohmann::json j = StageGraph::build(OperatingPoint{}).to_json();
  j["edges"][1]["to"] = "k_transmogrify";
  EXPECT_THROW(StageGraph::from_json(j), ValidationError);
  nlohmann::json bad_distance = StageGraph::build(OperatingPoint{}).to_json();
  bad_distance["edges"][0]["tile_distance"] = "two";
  try {
    StageGraph::from_json(bad_distance);
    FAIL() << "expected ValidationError";
  } catch (const ValidationError& e) {
    EXPECT_EQ(e.field(), "graph.edges[0].tile_distance");
  }
  nlohmann::json no_nodes = {{"edges", nlohmann::json::array()}};
  try {
    StageGraph::from_json(no_nodes);
    FAIL() << "expected ValidationError";
  } catch (const ValidationError& e) {
    EXPECT_EQ(e.field(), "graph.nodes");
  }
}

TEST(StageGraph, EdgeKindNamesRoundTrip) {
  for (auto k : {EdgeKind::data, EdgeKind::loop_carried, EdgeKind::buffer_reuse})
    EXPECT_EQ(parse_edge_kind(to_string(k)), k);
  EXPECT_THROW(parse_edge_kind("sideways"), ValidationError);
}

}  // namespace
}  // namespace tilepath
