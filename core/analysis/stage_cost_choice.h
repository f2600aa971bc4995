#pragma once
// Which of a case's stage-cost measurements the models run on, and where each came from.
//
// The preference rule, one per stage of the case's graph (docs/stage-model.md,
// "Choosing stage costs"):
//
//   isolated > removed > doubled > model, and unknown when none was reported.
//
// isolated runs the stage alone, so it is the stage's own cost; removed (the full
// kernel minus the kernel without the stage) is the part of it the overlap leaves
// unhidden; doubled (the kernel with the stage twice minus the full kernel) is its
// marginal cost under the kernel's own contention; model is a prediction for a
// modelled kernel, not a measurement of this one. A stage without any is unknown:
// never 0. The II model counts an unknown stage as 0 and lists it, so an II with
// unknown per-tile stages is a lower bound.

#include <array>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/stage.h"
#include "core/stage_graph.h"
#include "core/store/run_store.h"

namespace tilepath::analysis {

enum class CostSource { isolated, removed, doubled, model, unknown };
std::string_view to_string(CostSource s);
CostSource source_of(CostMethod m);

struct ChosenStageCosts {
  StageCosts us;                               // chosen cost per stage; NaN = unknown or absent
  std::array<CostSource, kStageCount> source;  // unknown for stages without a cost
  std::vector<Stage> stages;                   // the graph's stages, topological order

  ChosenStageCosts();
  double& operator[](Stage s) { return us[s]; }
  double operator[](Stage s) const { return us[s]; }
  CostSource source_of(Stage s) const { return source[static_cast<int>(s)]; }
  bool known(Stage s) const { return source_of(s) != CostSource::unknown; }
  bool any_known() const;
  bool model_only() const;             // at least one known, and every known one from a model
  std::vector<Stage> unknown() const;  // the graph's stages without a cost, in graph order
  // {"k_load": "isolated", ..., "accum": "unknown"} over the graph's stages.
  nlohmann::json sources_json() const;
};

// Applies the preference rule to a case's stage-cost rows for the stages of graph.
// Rows of stages absent from the graph are ignored; non-finite costs count as absent.
ChosenStageCosts choose_stage_costs(const std::vector<StageCostRow>& rows, const StageGraph& graph);

}  // namespace tilepath::analysis
