#pragma once
// Unrolls a stage graph over N tiles and schedules it (longest path on the DAG
// with agent serialisation and buffer-depth edges).

#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/stage_graph.h"

namespace tilepath {

struct ScheduledStage {
  Stage stage;
  Agent agent;
  int tile;  // -1 for once-per-step stages before the loop, n_tiles for those after
  double start_us;
  double end_us;
  bool critical;  // on the critical path
};

struct PipelineSchedule {
  std::vector<ScheduledStage> stages;  // in start order
  int n_tiles = 0;
  double makespan_us = 0;
  double steady_ii_us = 0;      // slope of tile completion times once steady
  double serial_sum_us = 0;     // sum of all scheduled stage costs
  double overlap_fraction = 0;  // 1 - makespan / serial_sum
  nlohmann::json to_json() const;
};

PipelineSchedule simulate_pipeline(const StageGraph& graph, const StageCosts& costs, int n_tiles);

}  // namespace tilepath
