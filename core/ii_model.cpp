#include "core/ii_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <boost/graph/adjacency_list.hpp>
#include <nlohmann/json.hpp>

namespace tilepath {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

int index_of(Stage s) { return static_cast<int>(s); }
int index_of(Agent a) { return static_cast<int>(a); }

nlohmann::json number_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

// Longest path through one tile along data edges between per-tile stages: the time
// the first tile takes to drain when nothing else is in flight.
double one_tile_fill(const StageGraph& graph, const StageCosts& used) {
  const auto& g = graph.graph();
  std::array<double, kStageCount> finish{};
  double fill = 0;
  for (Stage s : graph.stages()) {
    if (s == Stage::q_quant || s == Stage::combine) continue;
    double start = 0;
    for (auto v : boost::make_iterator_range(boost::vertices(g))) {
      if (g[v].stage != s) continue;
      for (auto e : boost::make_iterator_range(boost::in_edges(v, g))) {
        Stage from = g[boost::source(e, g)].stage;
        if (g[e].kind == EdgeKind::data && g[boost::source(e, g)].per_tile)
          start = std::max(start, finish[index_of(from)]);
      }
    }
    finish[index_of(s)] = start + used[s];
    fill = std::max(fill, finish[index_of(s)]);
  }
  return fill;
}

}  // namespace

IIPrediction predict_ii(const StageGraph& graph, const StageCosts& costs) {
  IIPrediction p;
  p.agent_busy_us.fill(0);
  const auto& g = graph.graph();
  for (auto v : boost::make_iterator_range(boost::vertices(g))) {
    const StageNode& node = g[v];
    // Present but not measured, or measured below zero: the II counts it as 0, and the JSON says so.
    if (!costs.has(node.stage)) {
      p.unknown_stages.push_back(node.stage);
    } else if (costs[node.stage] < 0) {
      p.below_zero_stages.push_back(node.stage);
    }
    const double cost = costs.modelled(node.stage);
    p.cost_us[node.stage] = cost;
    p.agent_of_stage[index_of(node.stage)] = node.agent;
    if (!node.per_tile) {
      p.once_per_step_us += cost;
      continue;
    }
    p.agent_busy_us[index_of(node.agent)] += cost;
    p.serial_sum_us += cost;
    p.max_stage_us = std::max(p.max_stage_us, cost);
  }
  std::sort(p.unknown_stages.begin(), p.unknown_stages.end());
  std::sort(p.below_zero_stages.begin(), p.below_zero_stages.end());

  for (int a = 0; a < kAgentCount; ++a)
    if (p.agent_busy_us[a] > p.ii_us) {
      p.ii_us = p.agent_busy_us[a];
      p.limiting_agent = static_cast<Agent>(a);
    }
  // Largest stage on the limiting agent; ties go to the earlier stage in program order.
  double largest = -1;
  for (Stage s : graph.stages_on(p.limiting_agent))
    if (p.cost_us[s] > largest) {
      largest = p.cost_us[s];
      p.limiting_stage = s;
    }
  if (largest < 0) p.limiting_stage = graph.stages().front();

  for (auto v : boost::make_iterator_range(boost::vertices(g)))
    if (g[v].per_tile) p.slack_us[g[v].stage] = p.ii_us - p.agent_busy_us[index_of(g[v].agent)];
  p.fill_us = one_tile_fill(graph, p.cost_us);
  return p;
}

double IIPrediction::ii_without(Stage s) const {
  auto busy = agent_busy_us;
  const bool counted_in_ii = s != Stage::q_quant && s != Stage::combine && std::isfinite(cost_us[s]);
  if (counted_in_ii) busy[index_of(agent_of_stage[index_of(s)])] -= cost_us[s];
  return *std::max_element(busy.begin(), busy.end());
}

double IIPrediction::latency_us(long long n_tiles) const {
  if (n_tiles <= 0) return once_per_step_us;
  return once_per_step_us + fill_us + static_cast<double>(n_tiles - 1) * ii_us;
}

nlohmann::json IIPrediction::to_json() const {
  nlohmann::json busy = nlohmann::json::object();
  for (int a = 0; a < kAgentCount; ++a) busy[std::string(to_string(static_cast<Agent>(a)))] = agent_busy_us[a];
  nlohmann::json stages = nlohmann::json::object();
  for (int i = 0; i < kStageCount; ++i) {
    if (!std::isfinite(cost_us.us[i])) continue;  // absent from the graph
    const Stage s = static_cast<Stage>(i);
    const bool unknown = std::find(unknown_stages.begin(), unknown_stages.end(), s) != unknown_stages.end();
    const bool below_zero = std::find(below_zero_stages.begin(), below_zero_stages.end(), s) != below_zero_stages.end();
    stages[std::string(to_string(s))] = {{"agent", to_string(agent_of_stage[i])},
                                         {"cost_us", unknown ? nlohmann::json(nullptr) : nlohmann::json(cost_us.us[i])},
                                         {"slack_us", number_or_null(slack_us.us[i])},
                                         {"unknown", unknown},
                                         {"below_zero", below_zero}};
  }
  const auto names = [](const std::vector<Stage>& list) {
    nlohmann::json out = nlohmann::json::array();
    for (Stage s : list) out.push_back(to_string(s));
    return out;
  };
  return {{"ii_us", ii_us},
          {"limiting_agent", to_string(limiting_agent)},
          {"limiting_stage", to_string(limiting_stage)},
          {"agent_busy_us", busy},
          {"stages", stages},
          {"unknown_stages", names(unknown_stages)},
          {"below_zero_stages", names(below_zero_stages)},
          {"serial_sum_us", serial_sum_us},
          {"max_stage_us", max_stage_us},
          {"once_per_step_us", once_per_step_us},
          {"fill_us", fill_us}};
}

double overlap_efficiency(const IIPrediction& p, double ii_measured_us) {
  const double denominator = p.serial_sum_us - p.max_stage_us;
  if (!std::isfinite(ii_measured_us) || denominator == 0) return kNaN;
  return std::clamp((p.serial_sum_us - ii_measured_us) / denominator, 0.0, 1.0);
}

BreakEven break_even(const IIPrediction& k8v8, double ii_measured_k8v8_us, const IIPrediction& k16v8,
                     double ii_measured_k16v8_us) {
  BreakEven b;
  b.delta_us = ii_measured_k8v8_us - ii_measured_k16v8_us;
  const int memory = index_of(Agent::memory);
  b.extra_k16_hbm_us = k16v8.agent_busy_us[memory] - k8v8.agent_busy_us[memory];
  b.unhidden_k8_prep_us = std::max(0.0, k8v8.ii_us - k8v8.ii_without(Stage::k_prep));
  b.pipeline_penalty_us = b.delta_us - b.unhidden_k8_prep_us + b.extra_k16_hbm_us;
  return b;
}

nlohmann::json BreakEven::to_json() const {
  return {{"delta_us", number_or_null(delta_us)},
          {"unhidden_k8_prep_us", number_or_null(unhidden_k8_prep_us)},
          {"pipeline_penalty_us", number_or_null(pipeline_penalty_us)},
          {"extra_k16_hbm_us", number_or_null(extra_k16_hbm_us)}};
}

double v_hidden_fraction(double t_k16v16_us, double t_k16v8_us, double t_k8v8_us) {
  if (!std::isfinite(t_k16v16_us) || !std::isfinite(t_k16v8_us) || !std::isfinite(t_k8v8_us)) return kNaN;
  const double full_delta = t_k8v8_us - t_k16v16_us;
  // "~0": below a part in 1e9 of the latencies, the ratio is noise.
  const double scale = std::max({std::abs(t_k16v16_us), std::abs(t_k8v8_us), std::numeric_limits<double>::min()});
  if (std::abs(full_delta) <= 1e-9 * scale) return kNaN;
  const double v_only_delta = t_k16v8_us - t_k16v16_us;
  return std::clamp(1.0 - v_only_delta / full_delta, 0.0, 1.0);
}

}  // namespace tilepath
