#include "core/analysis/variant_analysis.h"

#include <cmath>

#include "core/perf/cost_model.h"
#include "core/perf/gpu_model.h"

namespace tilepath::analysis {
namespace {

bool any_cost(const StageCosts& c, const StageGraph& g) {
  for (Stage s : g.stages())
    if (c.has(s)) return true;
  return false;
}

// The requested GPU model; "" means h200 if present, else the first one.
std::optional<perf::GpuModel> pick_gpu_model(const std::string& id, std::string* note) {
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

}  // namespace

std::vector<Stage> VariantAnalysis::unknownStages() const {
  std::vector<Stage> out;
  for (Stage s : graph.stages())
    if (!scheduleCosts().has(s)) out.push_back(s);
  return out;
}

VariantAnalysis analyze_variant(const OperatingPoint& op, const std::optional<CaseSummary>& measured_case,
                                const std::string& gpu_model_id, int n_tiles) {
  VariantAnalysis a;
  a.op = op;
  a.source_case = measured_case;
  if (measured_case) {
    const CaseAnalysis c = analyze_case(measured_case->record);
    a.graph = c.graph;
    a.measured = c.costs;
    a.measured_from_model = c.costs.model_only();
    a.measured_ii_us = c.measured_ii_us;
    a.tile_tokens = c.tile_tokens;
    for (const StageCostRow& r : measured_case->record.stage_costs) {
      if (!std::isfinite(r.cost_us)) continue;
      if (r.method == CostMethod::isolated) a.isolated[r.stage] = r.cost_us;
      if (r.method == CostMethod::removed) a.unhidden[r.stage] = r.cost_us;
    }
    if (measured_case->backend == "cuda") a.kernel_ii = predict_kernel_ii(measured_case->record);
  } else {
    a.graph = StageGraph::build(op);
    a.measured.stages = a.graph.stages();
  }

  if (auto gpu = pick_gpu_model(gpu_model_id, &a.prediction_note)) {
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

  a.ii_from_measured = a.measured.any_known();
  if (!a.ii_from_measured && !any_cost(a.predicted, a.graph)) return a;  // nothing to schedule
  // Unknown costs stay NaN: the II model and the simulator count them as 0 and the
  // views draw them as unknown.
  a.ii = predict_ii(a.graph, a.scheduleCosts());
  a.schedule = simulate_pipeline(a.graph, a.scheduleCosts(), n_tiles);
  return a;
}

}  // namespace tilepath::analysis
