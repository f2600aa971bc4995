#include "ui/variant_analysis.h"

#include <cmath>

#include "ui/case_selection.h"

namespace tilepath::ui {

bool anyCost(const StageCosts& c, const StageGraph& g) {
  for (Stage s : g.stages())
    if (c.has(s)) return true;
  return false;
}

namespace {

// Load the requested GPU model; "" means h200 if present, else the first one.
std::optional<perf::GpuModel> pickGpuModel(const std::string& id, std::string* note) {
  try {
    if (!id.empty()) return perf::load_gpu_model(id);
    std::vector<perf::GpuModel> all = perf::load_gpu_models();
    if (all.empty()) {
      *note = "no GPU models found in " + perf::models_dir();
      return std::nullopt;
    }
    for (const perf::GpuModel& g : all)
      if (g.id == "h200") return g;
    return all.front();
  } catch (const std::exception& e) {
    *note = e.what();
    return std::nullopt;
  }
}

// A stage present in the graph but without a cost gets 0 so the schedule stays
// defined (absent stages are simply not drawn as costly).
StageCosts completeFor(const StageGraph& g, StageCosts c) {
  for (Stage s : g.stages())
    if (!c.has(s)) c[s] = 0.0;
  return c;
}

}  // namespace

VariantAnalysis analyseVariant(const OperatingPoint& op, const std::optional<CaseSummary>& measured_case,
                               const std::string& gpu_model_id, int n_tiles) {
  VariantAnalysis a;
  a.op = op;
  a.graph = StageGraph::build(op);
  a.source_case = measured_case;

  if (measured_case) {
    a.measured = measuredStageCosts(measured_case->record, &a.measured_from_model);
    if (auto ii = measured_case->record.measurement("tile_interval_us")) a.measured_ii_us = *ii;
  }

  if (auto gpu = pickGpuModel(gpu_model_id, &a.prediction_note)) {
    a.gpu_model_id = gpu->id;
    try {
      perf::CostEstimate est = perf::estimate_costs(op, *gpu);
      if (est.supported)
        a.predicted = est.per_tile_us;
      else
        a.prediction_note = est.why_unsupported;
    } catch (const std::exception& e) {
      a.prediction_note = e.what();
    }
  }

  a.ii_from_measured = anyCost(a.measured, a.graph);
  if (!a.ii_from_measured && !anyCost(a.predicted, a.graph)) return a;  // nothing to schedule

  StageCosts costs = completeFor(a.graph, a.scheduleCosts());
  a.ii = predict_ii(a.graph, costs);
  a.schedule = simulate_pipeline(a.graph, costs, n_tiles);
  return a;
}

}  // namespace tilepath::ui
