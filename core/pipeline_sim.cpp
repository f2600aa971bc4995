#include "core/pipeline_sim.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>
#include <stdexcept>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>
#include <nlohmann/json.hpp>

namespace tilepath {

namespace {

// One stage instance of the unrolled schedule.
struct Instance {
  Stage stage;
  Agent agent;
  int tile;
  double cost_us;
};
using UnrolledGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Instance>;
using Vertex = UnrolledGraph::vertex_descriptor;

constexpr Vertex kNone = std::numeric_limits<Vertex>::max();

// Stage instances indexed by (stage, tile); once-per-step stages have one instance.
class InstanceTable {
 public:
  explicit InstanceTable(int n_tiles) : per_tile_(kStageCount, std::vector<Vertex>(n_tiles, kNone)) {}
  void set(Stage s, int tile, Vertex v) { per_tile_[static_cast<int>(s)][tile] = v; }
  void set_once(Stage s, Vertex v) { once_[static_cast<int>(s)] = v; }
  Vertex at(Stage s, int tile) const { return per_tile_[static_cast<int>(s)][tile]; }
  Vertex once(Stage s) const { return once_[static_cast<int>(s)]; }

 private:
  std::vector<std::vector<Vertex>> per_tile_;
  std::array<Vertex, kStageCount> once_ = make_empty();
  static std::array<Vertex, kStageCount> make_empty() {
    std::array<Vertex, kStageCount> a;
    a.fill(kNone);
    return a;
  }
};

// Slope of tile completion times over the second half of the tiles. A max-plus
// schedule becomes periodic, but not always with a period of one tile (single
// buffering, for one, alternates K-bound and V-bound intervals), so the window is
// cut to a whole number of periods: otherwise the slope would depend on where the
// tile count happens to end a period.
double steady_slope(const std::vector<double>& tile_end) {
  const int last = static_cast<int>(tile_end.size()) - 1;
  const int first = std::min(last / 2 + (last % 2), last - 1);  // = n/2 for n tiles, and >= 0
  const int span = last - first;
  const double tolerance = 1e-9 * std::max(1.0, std::abs(tile_end[last]));
  auto interval = [&](int t) { return tile_end[t] - tile_end[t - 1]; };
  int period = span;
  for (int p = 1; p <= span / 2; ++p) {
    bool repeats = true;
    for (int t = first + 1 + p; t <= last && repeats; ++t)
      repeats = std::abs(interval(t) - interval(t - p)) <= tolerance;
    if (repeats) {
      period = p;
      break;
    }
  }
  const int window = period * (span / period);
  return (tile_end[last] - tile_end[last - window]) / window;
}

}  // namespace

PipelineSchedule simulate_pipeline(const StageGraph& graph, const StageCosts& costs, int n_tiles) {
  if (n_tiles < 1)
    throw ValidationError("n_tiles", "must be at least 1, got " + std::to_string(n_tiles), "integers >= 1");
  const auto& g = graph.graph();
  const std::vector<Stage> topo = graph.stages();
  auto node_of = [&](Stage s) -> const StageNode& {
    for (auto v : boost::make_iterator_range(boost::vertices(g)))
      if (g[v].stage == s) return g[v];
    throw std::logic_error("stage missing from its own graph");
  };

  // Vertices in program order: once-per-step stages that feed the loop, the loop
  // (tile-major, stages in topological order), then those that consume it.
  UnrolledGraph u;
  InstanceTable table(n_tiles);
  std::vector<Stage> before_loop, loop_body, after_loop;
  bool seen_per_tile = false;
  for (Stage s : topo) {
    if (node_of(s).per_tile) {
      loop_body.push_back(s);
      seen_per_tile = true;
    } else {
      (seen_per_tile ? after_loop : before_loop).push_back(s);
    }
  }
  if (loop_body.empty())
    throw ValidationError("graph.nodes", graph.op().variant_label() + " has no per-tile stage to unroll",
                          "k_load, qk, ...");
  for (Stage s : before_loop)
    table.set_once(s, boost::add_vertex(Instance{s, node_of(s).agent, -1, costs.modelled(s)}, u));
  for (int t = 0; t < n_tiles; ++t)
    for (Stage s : loop_body)
      table.set(s, t, boost::add_vertex(Instance{s, node_of(s).agent, t, costs.modelled(s)}, u));
  for (Stage s : after_loop)
    table.set_once(s, boost::add_vertex(Instance{s, node_of(s).agent, n_tiles, costs.modelled(s)}, u));

  // Graph edges, unrolled. Edges are added data first, so equal-time ties in the
  // critical-path trace resolve to a data dependency.
  auto unroll = [&](EdgeKind wanted) {
    for (auto e : boost::make_iterator_range(boost::edges(g))) {
      const StageEdge& edge = g[e];
      if (edge.kind != wanted) continue;
      const StageNode& from = g[boost::source(e, g)];
      const StageNode& to = g[boost::target(e, g)];
      if (from.per_tile && to.per_tile) {
        for (int t = 0; t + edge.tile_distance < n_tiles; ++t)
          boost::add_edge(table.at(from.stage, t), table.at(to.stage, t + edge.tile_distance), u);
      } else if (!from.per_tile && to.per_tile) {
        for (int t = 0; t < n_tiles; ++t) boost::add_edge(table.once(from.stage), table.at(to.stage, t), u);
      } else if (from.per_tile && !to.per_tile) {
        boost::add_edge(table.at(from.stage, n_tiles - 1), table.once(to.stage), u);
      } else {
        boost::add_edge(table.once(from.stage), table.once(to.stage), u);
      }
    }
  };
  unroll(EdgeKind::data);
  unroll(EdgeKind::loop_carried);
  unroll(EdgeKind::buffer_reuse);
  // Agent serialisation: an agent runs its instances one at a time, in program order.
  std::array<Vertex, kAgentCount> last_on_agent;
  last_on_agent.fill(kNone);
  for (Vertex v = 0; v < boost::num_vertices(u); ++v) {
    Vertex& previous = last_on_agent[static_cast<int>(u[v].agent)];
    if (previous != kNone) boost::add_edge(previous, v, u);
    previous = v;
  }

  std::vector<Vertex> order;
  try {
    boost::topological_sort(u, std::back_inserter(order));
  } catch (const boost::not_a_dag&) {
    throw std::invalid_argument("pipeline of " + graph.op().variant_label() +
                                ": dependencies form a cycle (a tile_distance-0 edge against program order?)");
  }
  std::reverse(order.begin(), order.end());

  // Longest path: each instance starts when its last predecessor ends.
  const auto n = boost::num_vertices(u);
  std::vector<double> start(n, 0), end(n, 0);
  std::vector<Vertex> start_setter(n, kNone);
  for (Vertex v : order) {
    for (auto e : boost::make_iterator_range(boost::in_edges(v, u))) {
      Vertex p = boost::source(e, u);
      if (start_setter[v] == kNone || end[p] > start[v]) {
        start[v] = end[p];
        start_setter[v] = p;
      }
    }
    end[v] = start[v] + u[v].cost_us;
  }

  PipelineSchedule schedule;
  schedule.n_tiles = n_tiles;
  std::vector<bool> critical(n, false);
  Vertex last_finishing = order.front();
  for (Vertex v : order)
    if (end[v] >= end[last_finishing]) last_finishing = v;  // ties: the later in topological order
  schedule.makespan_us = end[last_finishing];
  for (Vertex v = last_finishing; v != kNone; v = start_setter[v]) critical[v] = true;

  for (Vertex v = 0; v < n; ++v) {
    schedule.serial_sum_us += u[v].cost_us;
    schedule.stages.push_back(ScheduledStage{u[v].stage, u[v].agent, u[v].tile, start[v], end[v], critical[v]});
  }
  // Vertex ids are program order, so a stable sort keeps it among equal starts.
  std::stable_sort(schedule.stages.begin(), schedule.stages.end(),
                   [](const ScheduledStage& a, const ScheduledStage& b) { return a.start_us < b.start_us; });

  // Steady II: slope of the last loop stage's end time over the second half of the tiles.
  if (n_tiles >= 2) {
    std::vector<double> tile_end(n_tiles);
    for (int t = 0; t < n_tiles; ++t) tile_end[t] = end[table.at(loop_body.back(), t)];
    schedule.steady_ii_us = steady_slope(tile_end);
  } else {
    schedule.steady_ii_us = std::numeric_limits<double>::quiet_NaN();
  }
  schedule.overlap_fraction = schedule.serial_sum_us > 0 ? 1.0 - schedule.makespan_us / schedule.serial_sum_us : 0.0;
  return schedule;
}

nlohmann::json PipelineSchedule::to_json() const {
  nlohmann::json list = nlohmann::json::array();
  for (const ScheduledStage& s : stages)
    list.push_back({{"stage", to_string(s.stage)},
                    {"agent", to_string(s.agent)},
                    {"tile", s.tile},
                    {"start_us", s.start_us},
                    {"end_us", s.end_us},
                    {"critical", s.critical}});
  return {{"n_tiles", n_tiles},
          {"makespan_us", makespan_us},
          {"steady_ii_us", std::isfinite(steady_ii_us) ? nlohmann::json(steady_ii_us) : nlohmann::json(nullptr)},
          {"serial_sum_us", serial_sum_us},
          {"overlap_fraction", overlap_fraction},
          {"stages", list}};
}

}  // namespace tilepath
