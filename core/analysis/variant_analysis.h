#pragma once
// Everything the stage-graph and timeline views draw for one variant: the graph, the
// stage costs of the stored case that measures it (with their sources), the cost
// model's per-tile costs for a GPU model, the II prediction and the simulated
// schedule. Computed here, Qt-free, so the views, the models and the tests see the
// same numbers as `tilepath analyze`.

#include <optional>
#include <string>

#include "core/analysis/case_analysis.h"
#include "core/analysis/kernel_ii_model.h"
#include "core/analysis/stage_cost_choice.h"
#include "core/ii_model.h"
#include "core/pipeline_sim.h"
#include "core/stage_graph.h"
#include "core/store/run_store.h"

namespace tilepath::analysis {

struct VariantAnalysis {
  OperatingPoint op;
  StageGraph graph;
  std::string gpu_model_id;          // "" when no GPU model was available
  std::string prediction_note;       // why predicted costs are missing, if they are
  ChosenStageCosts measured;         // of the stored case; unknown where it has no cost (or there is no case)
  bool measured_from_model = false;  // every known cost of the case came from a model (sim backend)
  StageCosts predicted;              // cost model per tile; NaN when unavailable
  std::optional<CaseSummary> source_case;
  double measured_ii_us = NAN;  // tile_interval_us of the case
  int tile_tokens = 0;          // KV tokens per tile of the case's kernel; 0 = not reported
  // The case's isolated costs and the part of each the overlap leaves unhidden (its
  // removed cost), per stage; NaN where not measured. The views draw both.
  StageCosts isolated, unhidden;
  // cuda cases with isolated costs: the kernel II model (its unexplained_us is the part
  // of the measured interval no stage explains).
  std::optional<KernelIIPrediction> kernel_ii;
  IIPrediction ii;  // from the costs the schedule uses (unknown ones count as 0)
  bool ii_from_measured = false;
  PipelineSchedule schedule;

  // The costs the views schedule: the case's when it has any, else the cost model's.
  const StageCosts& scheduleCosts() const { return ii_from_measured ? measured.us : predicted; }
  // Stages of the graph without a cost in scheduleCosts(): drawn as unknown.
  std::vector<Stage> unknownStages() const;
};

// n_tiles: tiles unrolled for the timeline. gpu_model_id "" = h200 if present, else the
// first model found. Never throws for missing models or cases: fields stay NaN/empty.
VariantAnalysis analyze_variant(const OperatingPoint& op, const std::optional<CaseSummary>& measured_case,
                                const std::string& gpu_model_id = "", int n_tiles = 8);

}  // namespace tilepath::analysis
