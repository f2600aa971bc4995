#pragma once
// From one stored (or just measured) case to what the stage model says about it:
// the chosen stage costs with their sources, the II prediction, the measured tile
// interval beside it, and the prediction row the run store keeps.

#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/analysis/stage_cost_choice.h"
#include "core/ii_model.h"
#include "core/stage_graph.h"
#include "core/store/run_store.h"

namespace tilepath::analysis {

// The name stored in predictions.model for rows derived by analyze_case.
inline constexpr const char* kPredictionModel = "ii_model/v2";

struct CaseAnalysis {
  OperatingPoint op;  // the case's operating point, as stored
  // The graph of the kernel that ran: with splits = 0 (auto) the backend's split count
  // decides whether a combine stage exists.
  StageGraph graph;
  ChosenStageCosts costs;
  std::optional<IIPrediction> prediction;  // nullopt when no stage of the graph has a cost
  double measured_ii_us = NAN;             // the case's tile_interval_us
  double latency_us = NAN;
  int tile_tokens = 0;  // KV tokens per tile; 0 = not reported

  std::vector<Stage> unknown_stages() const { return costs.unknown(); }
  // An unknown per-tile stage counts as 0 in the II, so the II can only be higher.
  bool ii_is_lower_bound() const;
  double overlap_efficiency() const;  // NaN without a prediction or a measured II

  // The `tilepath analyze --json` object of this case: stages (agent, cost, source,
  // slack), predicted_ii_us, measured_ii_us, limiting_stage, limiting_agent,
  // unknown_stages, ii_is_lower_bound, tile_tokens.
  nlohmann::json to_json() const;
};

// The operating point whose graph describes the kernel that ran (auto splits resolved).
OperatingPoint kernel_operating_point(const CaseRecord& rec);

CaseAnalysis analyze_case(const CaseRecord& rec);

// What the run store keeps for an analysed case; nullopt when there is no prediction.
std::optional<PredictionRow> prediction_row(const CaseAnalysis& a);

}  // namespace tilepath::analysis
