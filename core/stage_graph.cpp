#include "core/stage_graph.h"

#include <algorithm>
#include <optional>
#include <queue>
#include <sstream>
#include <stdexcept>

#include <boost/graph/graphviz.hpp>
#include <nlohmann/json.hpp>

namespace tilepath {

namespace {

// Vertex insertion order. It is itself a topological order of the data edges, so
// ties in the topological sort resolve to this (k_load before v_load on the memory
// pipe, the order a producer issues them).
constexpr std::array<Stage, 11> kCanonicalOrder = {Stage::q_quant, Stage::k_load,  Stage::k_prep, Stage::qk,
                                                   Stage::k_bias,  Stage::softmax, Stage::v_load, Stage::v_prep,
                                                   Stage::pv,      Stage::accum,   Stage::combine};

constexpr std::array<std::string_view, 3> kEdgeKindNames = {"data", "loop_carried", "buffer_reuse"};

bool is_per_tile(Stage s) { return s != Stage::q_quant && s != Stage::combine; }

using Vertex = StageGraphBase::vertex_descriptor;

std::optional<Vertex> find_vertex(const StageGraphBase& g, Stage s) {
  for (auto v : boost::make_iterator_range(boost::vertices(g)))
    if (g[v].stage == s) return v;
  return std::nullopt;
}

std::string joined_stage_names(const StageGraphBase& g) {
  std::string out;
  for (auto v : boost::make_iterator_range(boost::vertices(g))) {
    if (!out.empty()) out += ", ";
    out += to_string(g[v].stage);
  }
  return out;
}

// Colours per agent (Tableau 10), shared by the DOT output and the docs.
std::string_view agent_colour(Agent a) {
  switch (a) {
    case Agent::memory:
      return "#4e79a7";
    case Agent::transform:
      return "#f28e2b";
    case Agent::qk_mma:
      return "#e15759";
    case Agent::softmax:
      return "#76b7b2";
    case Agent::pv_mma:
      return "#59a14f";
  }
  return "#bab0ac";
}

std::string_view edge_style(EdgeKind k) {
  switch (k) {
    case EdgeKind::data:
      return "solid";
    case EdgeKind::loop_carried:
      return "dashed";
    case EdgeKind::buffer_reuse:
      return "dotted";
  }
  return "solid";
}

const nlohmann::json& required_field(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key))
    throw ValidationError(where + "." + key, "missing", "see StageGraph::to_json");
  return j.at(key);
}

}  // namespace

std::string_view to_string(EdgeKind k) { return kEdgeKindNames.at(static_cast<size_t>(k)); }

EdgeKind parse_edge_kind(std::string_view s) {
  for (size_t i = 0; i < kEdgeKindNames.size(); ++i)
    if (kEdgeKindNames[i] == s) return static_cast<EdgeKind>(i);
  throw ValidationError("edge kind", "unknown value '" + std::string(s) + "'", "data, loop_carried, buffer_reuse");
}

bool stage_present(Stage s, const OperatingPoint& op) {
  switch (s) {
    case Stage::k_load:
    case Stage::qk:
    case Stage::softmax:
    case Stage::v_load:
    case Stage::pv:
    case Stage::accum:
      return true;
    // K is converted on chip only on the transform path; fp8_qk feeds FP8 K to the MMA.
    case Stage::k_prep:
      return k_is_fp8(op.kv) && op.k_path == KPath::transform;
    // In k_only PV consumes FP8 V directly (P quantized to E4M3): that cost is pv's.
    case Stage::v_prep:
      return v_is_fp8(op.kv) && op.mode != TransformMode::k_only;
    case Stage::q_quant:
      return op.k_path == KPath::fp8_qk;
    case Stage::k_bias:
      return restores_bias_in_scores(op);
    // splits == 0 means "auto": the count is chosen by the backend, so no merge is modelled.
    case Stage::combine:
      return op.splits > 1;
  }
  return false;
}

Agent default_agent(Stage s, TransformMode mode) {
  switch (s) {
    case Stage::k_load:
    case Stage::v_load:
      return Agent::memory;
    case Stage::k_prep:
      return mode == TransformMode::separate_kv ? Agent::transform : Agent::qk_mma;
    case Stage::v_prep:
      return mode == TransformMode::separate_kv ? Agent::transform : Agent::pv_mma;
    case Stage::qk:
    case Stage::k_bias:
    case Stage::q_quant:
      return Agent::qk_mma;
    case Stage::softmax:
      return Agent::softmax;
    case Stage::pv:
    case Stage::accum:
    case Stage::combine:
      return Agent::pv_mma;
  }
  return Agent::memory;
}

StageGraph StageGraph::build(const OperatingPoint& op, int buffer_depth) {
  if (buffer_depth < 1)
    throw ValidationError("buffer_depth", "must be at least 1, got " + std::to_string(buffer_depth),
                          "integers >= 1 (SMEM ring stages)");
  StageGraph sg;
  sg.op_ = op;
  sg.buffer_depth_ = buffer_depth;
  auto& g = sg.g_;
  std::array<std::optional<Vertex>, kStageCount> vertex_of{};
  for (Stage s : kCanonicalOrder)
    if (stage_present(s, op))
      vertex_of[static_cast<int>(s)] = boost::add_vertex(StageNode{s, default_agent(s, op.mode), is_per_tile(s)}, g);

  auto present = [&](Stage s) { return vertex_of[static_cast<int>(s)].has_value(); };
  auto connect = [&](Stage from, Stage to, EdgeKind kind, int distance) {
    boost::add_edge(*vertex_of[static_cast<int>(from)], *vertex_of[static_cast<int>(to)], StageEdge{kind, distance}, g);
  };
  // Data chains, skipping absent stages.
  auto chain = [&](std::initializer_list<Stage> stages) {
    std::optional<Stage> previous;
    for (Stage s : stages) {
      if (!present(s)) continue;
      if (previous) connect(*previous, s, EdgeKind::data, 0);
      previous = s;
    }
  };
  chain({Stage::k_load, Stage::k_prep, Stage::qk, Stage::k_bias, Stage::softmax, Stage::pv, Stage::accum});
  chain({Stage::v_load, Stage::v_prep, Stage::pv});
  if (present(Stage::q_quant)) connect(Stage::q_quant, Stage::qk, EdgeKind::data, 0);
  if (present(Stage::combine)) connect(Stage::accum, Stage::combine, EdgeKind::data, 0);

  connect(Stage::softmax, Stage::softmax, EdgeKind::loop_carried, 1);
  connect(Stage::accum, Stage::accum, EdgeKind::loop_carried, 1);

  // Buffer reuse: the last reader of a ring slot frees it for the load depth tiles later.
  // In separate_kv the transform warps read the FP8 slot and the MMA reads a staged
  // BF16 tile, which is itself a ring of the same depth.
  const bool staged = op.mode == TransformMode::separate_kv;
  const bool k_staged = staged && present(Stage::k_prep);
  const bool v_staged = staged && present(Stage::v_prep);
  connect(k_staged ? Stage::k_prep : Stage::qk, Stage::k_load, EdgeKind::buffer_reuse, buffer_depth);
  connect(v_staged ? Stage::v_prep : Stage::pv, Stage::v_load, EdgeKind::buffer_reuse, buffer_depth);
  if (k_staged) connect(Stage::qk, Stage::k_prep, EdgeKind::buffer_reuse, buffer_depth);
  if (v_staged) connect(Stage::pv, Stage::v_prep, EdgeKind::buffer_reuse, buffer_depth);
  return sg;
}

bool StageGraph::has_stage(Stage s) const { return find_vertex(g_, s).has_value(); }

Agent StageGraph::agent_of(Stage s) const {
  auto v = find_vertex(g_, s);
  if (!v)
    throw ValidationError("stage", "'" + std::string(to_string(s)) + "' is not in the graph of " + op_.variant_label(),
                          joined_stage_names(g_));
  return g_[*v].agent;
}

std::vector<Stage> StageGraph::stages() const {
  // Kahn's algorithm over data edges, smallest vertex index first, so the order is
  // deterministic and follows the insertion order where the graph leaves it free.
  const auto n = boost::num_vertices(g_);
  std::vector<int> pending_inputs(n, 0);
  for (auto e : boost::make_iterator_range(boost::edges(g_)))
    if (g_[e].kind == EdgeKind::data) ++pending_inputs[boost::target(e, g_)];
  std::priority_queue<Vertex, std::vector<Vertex>, std::greater<>> ready;
  for (Vertex v = 0; v < n; ++v)
    if (pending_inputs[v] == 0) ready.push(v);
  std::vector<Stage> order;
  while (!ready.empty()) {
    Vertex v = ready.top();
    ready.pop();
    order.push_back(g_[v].stage);
    for (auto e : boost::make_iterator_range(boost::out_edges(v, g_)))
      if (g_[e].kind == EdgeKind::data && --pending_inputs[boost::target(e, g_)] == 0) ready.push(boost::target(e, g_));
  }
  if (order.size() != n) throw std::logic_error("stage graph of " + op_.variant_label() + ": data edges form a cycle");
  return order;
}

std::vector<Stage> StageGraph::stages_on(Agent a) const {
  std::vector<Stage> out;
  for (Stage s : stages()) {
    auto v = *find_vertex(g_, s);
    if (g_[v].per_tile && g_[v].agent == a) out.push_back(s);
  }
  return out;
}

std::vector<std::pair<Stage, Stage>> StageGraph::edges(EdgeKind k) const {
  std::vector<std::pair<Stage, Stage>> out;
  for (auto e : boost::make_iterator_range(boost::edges(g_)))
    if (g_[e].kind == k) out.emplace_back(g_[boost::source(e, g_)].stage, g_[boost::target(e, g_)].stage);
  return out;
}

std::string StageGraph::to_dot() const {
  std::ostringstream os;
  auto write_vertex = [this](std::ostream& out, Vertex v) {
    const StageNode& node = g_[v];
    out << "[label=\"" << to_string(node.stage) << "\\n"
        << to_string(node.agent) << "\", style=filled, fillcolor=\"" << agent_colour(node.agent)
        << "\", shape=" << (node.per_tile ? "ellipse" : "box") << "]";
  };
  auto write_edge = [this](std::ostream& out, StageGraphBase::edge_descriptor e) {
    const StageEdge& edge = g_[e];
    out << "[label=\"" << to_string(edge.kind);
    if (edge.tile_distance != 0) out << " +" << edge.tile_distance;
    out << "\", style=" << edge_style(edge.kind) << "]";
  };
  auto write_graph = [this](std::ostream& out) {
    out << "label=\"" << op_.variant_label() << " (buffer depth " << buffer_depth_ << ")\";\n";
  };
  boost::write_graphviz(os, g_, write_vertex, write_edge, write_graph);
  return os.str();
}

nlohmann::json StageGraph::to_json() const {
  nlohmann::json nodes = nlohmann::json::array();
  for (auto v : boost::make_iterator_range(boost::vertices(g_)))
    nodes.push_back(
        {{"stage", to_string(g_[v].stage)}, {"agent", to_string(g_[v].agent)}, {"per_tile", g_[v].per_tile}});
  nlohmann::json edge_list = nlohmann::json::array();
  for (auto e : boost::make_iterator_range(boost::edges(g_)))
    edge_list.push_back({{"from", to_string(g_[boost::source(e, g_)].stage)},
                         {"to", to_string(g_[boost::target(e, g_)].stage)},
                         {"kind", to_string(g_[e].kind)},
                         {"tile_distance", g_[e].tile_distance}});
  return {{"variant", op_.variant_label()},
          {"buffer_depth", buffer_depth_},
          {"operating_point", tilepath::to_json(op_)},
          {"nodes", nodes},
          {"edges", edge_list}};
}

StageGraph StageGraph::from_json(const nlohmann::json& j) {
  StageGraph sg;
  if (j.is_object() && j.contains("operating_point")) sg.op_ = operating_point_from_json(j.at("operating_point"));
  if (j.is_object() && j.contains("buffer_depth")) {
    const auto& depth = j.at("buffer_depth");
    if (!depth.is_number_integer() || depth.get<int>() < 1)
      throw ValidationError("graph.buffer_depth", "must be an integer >= 1", "integers >= 1");
    sg.buffer_depth_ = depth.get<int>();
  }
  const auto& nodes = required_field(j, "nodes", "graph");
  if (!nodes.is_array()) throw ValidationError("graph.nodes", "must be an array", "[{stage, agent, per_tile}]");
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string where = "graph.nodes[" + std::to_string(i) + "]";
    const auto& node = nodes[i];
    const auto& stage_name = required_field(node, "stage", where);
    const auto& agent_name = required_field(node, "agent", where);
    if (!stage_name.is_string() || !agent_name.is_string())
      throw ValidationError(where, "stage and agent must be strings", "stage and agent names");
    Stage s = parse_stage(stage_name.get<std::string>());
    if (find_vertex(sg.g_, s)) throw ValidationError(where + ".stage", "duplicate stage", "each stage at most once");
    bool per_tile = is_per_tile(s);
    if (node.contains("per_tile")) {
      if (!node.at("per_tile").is_boolean())
        throw ValidationError(where + ".per_tile", "must be a boolean", "true, false");
      per_tile = node.at("per_tile").get<bool>();
    }
    boost::add_vertex(StageNode{s, parse_agent(agent_name.get<std::string>()), per_tile}, sg.g_);
  }
  const auto& edge_list = required_field(j, "edges", "graph");
  if (!edge_list.is_array())
    throw ValidationError("graph.edges", "must be an array", "[{from, to, kind, tile_distance}]");
  for (size_t i = 0; i < edge_list.size(); ++i) {
    const std::string where = "graph.edges[" + std::to_string(i) + "]";
    const auto& edge = edge_list[i];
    auto endpoint = [&](const char* key) {
      const auto& name = required_field(edge, key, where);
      if (!name.is_string())
        throw ValidationError(where + "." + key, "must be a stage name", joined_stage_names(sg.g_));
      auto v = find_vertex(sg.g_, parse_stage(name.get<std::string>()));
      if (!v) throw ValidationError(where + "." + key, "stage not among the nodes", joined_stage_names(sg.g_));
      return *v;
    };
    Vertex from = endpoint("from");
    Vertex to = endpoint("to");
    const auto& kind_name = required_field(edge, "kind", where);
    if (!kind_name.is_string())
      throw ValidationError(where + ".kind", "must be a string", "data, loop_carried, buffer_reuse");
    EdgeKind kind = parse_edge_kind(kind_name.get<std::string>());
    int distance = 0;
    if (edge.contains("tile_distance")) {
      const auto& d = edge.at("tile_distance");
      if (!d.is_number_integer() || d.get<int>() < 0)
        throw ValidationError(where + ".tile_distance", "must be an integer >= 0",
                              "0 (data), 1 (loop-carried), buffer depth");
      distance = d.get<int>();
    }
    boost::add_edge(from, to, StageEdge{kind, distance}, sg.g_);
  }
  return sg;
}

}  // namespace tilepath
