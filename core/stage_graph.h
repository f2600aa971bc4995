#pragma once
// The per-tile stage-dependency graph of one variant (Boost.Graph adjacency_list).

#include <string>
#include <vector>

#include <boost/graph/adjacency_list.hpp>
#include <nlohmann/json_fwd.hpp>

#include "core/operating_point.h"
#include "core/stage.h"

namespace tilepath {

enum class EdgeKind {
  data,          // producer -> consumer within a tile
  loop_carried,  // softmax(n) -> softmax(n+1), accum(n) -> accum(n+1)
  buffer_reuse,  // consumer of tile n frees the buffer that load n+depth fills
};
std::string_view to_string(EdgeKind k);
EdgeKind parse_edge_kind(std::string_view s);  // throws ValidationError

// Whether a stage exists in the graph of op's variant (kv, k_path, mode, splits).
bool stage_present(Stage s, const OperatingPoint& op);
// The agent that runs a stage under the default assignment for a transform mode
// (reproduces the design note's II_K8 / II_K16 formulas; see docs/stage-model.md).
Agent default_agent(Stage s, TransformMode mode);

struct StageNode {
  Stage stage;
  Agent agent;
  bool per_tile = true;  // false for q_quant and combine
};
struct StageEdge {
  EdgeKind kind = EdgeKind::data;
  int tile_distance = 0;  // 0 data; 1 loop-carried; buffer depth for buffer_reuse
};

using StageGraphBase = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, StageNode, StageEdge>;

class StageGraph {
 public:
  // Graph for the variant of op (kv, k_path, mode, k_repr, splits). buffer_depth = SMEM ring stages.
  static StageGraph build(const OperatingPoint& op, int buffer_depth = 2);

  const StageGraphBase& graph() const { return g_; }
  bool has_stage(Stage s) const;
  Agent agent_of(Stage s) const;                // throws if absent
  std::vector<Stage> stages() const;            // present stages, topological order
  std::vector<Stage> stages_on(Agent a) const;  // per-tile stages on an agent
  std::vector<std::pair<Stage, Stage>> edges(EdgeKind k) const;
  int buffer_depth() const { return buffer_depth_; }
  const OperatingPoint& op() const { return op_; }

  std::string to_dot() const;  // boost::write_graphviz, agents as colours
  nlohmann::json to_json()
      const;  // {"variant":..,"nodes":[{stage,agent,per_tile}],"edges":[{from,to,kind,tile_distance}]}
  // Inverse of to_json (also carries "buffer_depth" and "operating_point"); throws
  // ValidationError naming the bad field.
  static StageGraph from_json(const nlohmann::json& j);

 private:
  StageGraphBase g_;
  OperatingPoint op_;
  int buffer_depth_ = 2;
};

}  // namespace tilepath
