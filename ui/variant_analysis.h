#pragma once
// Everything the stage-graph and timeline views draw for one variant: the
// graph, measured costs (from a stored case), predicted costs (cost model for a
// GPU model), the II prediction and the simulated schedule. Qt-free on purpose
// so it is computed the same way in views, models and tests.

#include <optional>
#include <string>

#include "core/ii_model.h"
#include "core/perf/cost_model.h"
#include "core/pipeline_sim.h"
#include "core/stage_graph.h"
#include "core/store/run_store.h"

namespace tilepath::ui {

struct VariantAnalysis {
  OperatingPoint op;
  StageGraph graph;
  std::string gpu_model_id;          // "" when no GPU model was available
  std::string prediction_note;       // why predicted costs are missing, if they are
  StageCosts measured;               // NaN where the case has no cost (or no case)
  bool measured_from_model = false;  // the case's costs came from a model (sim backend)
  StageCosts predicted;              // cost model per tile; NaN when unavailable
  std::optional<CaseSummary> source_case;
  double measured_ii_us = NAN;  // tile_interval_us of the case
  IIPrediction ii;              // from the costs the schedule uses
  bool ii_from_measured = false;
  PipelineSchedule schedule;

  // The cost the views treat as the stage's cost: measured when present, else predicted.
  const StageCosts& scheduleCosts() const { return ii_from_measured ? measured : predicted; }
};

// n_tiles: tiles unrolled for the timeline. gpu_model_id "" = first model found
// (h200 preferred). Never throws for missing models/cases: fields stay NaN/empty.
VariantAnalysis analyseVariant(const OperatingPoint& op, const std::optional<CaseSummary>& measured_case,
                               const std::string& gpu_model_id = "", int n_tiles = 8);

// The stage's cost in a StageCosts restricted to stages present in the graph.
bool anyCost(const StageCosts& c, const StageGraph& g);

}  // namespace tilepath::ui
