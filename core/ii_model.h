#pragma once
// Steady-state initiation interval (II) from per-tile stage costs.

#include <array>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/stage_graph.h"

namespace tilepath {

struct IIPrediction {
  double ii_us = 0;  // max over agents of summed stage costs
  Agent limiting_agent = Agent::memory;
  Stage limiting_stage = Stage::k_load;             // the largest stage on the limiting agent
  std::array<double, kAgentCount> agent_busy_us{};  // summed cost per agent per tile
  StageCosts slack_us;                              // ii - agent_busy(agent of stage), NaN for absent stages
  double serial_sum_us = 0;                         // sum of all per-tile stage costs
  double max_stage_us = 0;
  double once_per_step_us = 0;                      // q_quant + combine
  double fill_us = 0;                               // longest data path through one tile (pipeline fill)
  StageCosts cost_us;                               // cost used per present stage (unknown = 0), NaN for absent
  std::array<Agent, kStageCount> agent_of_stage{};  // agent of each present stage
  std::vector<Stage> unknown_stages;                // present stages whose cost was NaN (counted as 0)
  // Present stages whose measured cost was below zero (counted as 0): an ablation
  // difference, e.g. removing the stage made the kernel no faster (the stage is hidden,
  // or the difference is noise or a schedule change). A duration cannot be negative,
  // and a negative one would shrink its agent's busy time.
  std::vector<Stage> below_zero_stages;
  // II with stage s costing 0 (the II the other stages alone would set).
  double ii_without(Stage s) const;
  // Predicted latency for n_tiles tiles: once_per_step + fill + (n_tiles-1)*ii
  double latency_us(long long n_tiles) const;
  nlohmann::json to_json() const;
};

IIPrediction predict_ii(const StageGraph& graph, const StageCosts& costs);

// (sum of stages - II_measured) / (sum of stages - max stage): 1 = perfect overlap, 0 = serial.
double overlap_efficiency(const IIPrediction& p, double ii_measured_us);

// T(K8/V8) - T(K16/V8) ~= unhidden K8 prep + K8 pipeline/occupancy penalty - extra K16 HBM time
struct BreakEven {
  double delta_us = 0;             // measured T(K8/V8) - T(K16/V8) (per tile or total, same unit as inputs)
  double unhidden_k8_prep_us = 0;  // II growth due to k_prep that overlap did not hide
  double pipeline_penalty_us = 0;  // residual: delta - unhidden prep + extra K16 HBM
  double extra_k16_hbm_us = 0;     // time the extra K byte costs at the floor
  nlohmann::json to_json() const;
};
// Inputs: predictions and measured tile intervals of the two variants at one shape.
BreakEven break_even(const IIPrediction& k8v8, double ii_measured_k8v8_us, const IIPrediction& k16v8,
                     double ii_measured_k16v8_us);

// V hidden fraction: 1 - (T(K16/V8) - T(K16/V16)) / (T(K8/V8) - T(K16/V16)) clamped to [0,1]
// (the share of the full FP8 delta that V preparation does NOT add).
double v_hidden_fraction(double t_k16v16_us, double t_k16v8_us, double t_k8v8_us);

}  // namespace tilepath
