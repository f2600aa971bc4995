#include "core/analysis/case_analysis.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

namespace tilepath::analysis {
namespace {

nlohmann::json number_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

bool once_per_step(Stage s) { return s == Stage::q_quant || s == Stage::combine; }

nlohmann::json stage_names(const std::vector<Stage>& stages) {
  nlohmann::json out = nlohmann::json::array();
  for (Stage s : stages) out.push_back(std::string(to_string(s)));
  return out;
}

}  // namespace

OperatingPoint kernel_operating_point(const CaseRecord& rec) {
  OperatingPoint op = rec.op;
  if (op.splits == 0 && rec.kernel.splits > 0) op.splits = rec.kernel.splits;
  return op;
}

bool CaseAnalysis::ii_is_lower_bound() const {
  for (Stage s : costs.unknown())
    if (!once_per_step(s)) return true;
  return false;
}

double CaseAnalysis::overlap_efficiency() const {
  return prediction ? tilepath::overlap_efficiency(*prediction, measured_ii_us) : NAN;
}

CaseAnalysis analyze_case(const CaseRecord& rec) {
  CaseAnalysis a;
  a.op = rec.op;
  a.graph = StageGraph::build(kernel_operating_point(rec));
  a.costs = choose_stage_costs(rec.stage_costs, a.graph);
  a.measured_ii_us = rec.measurement("tile_interval_us").value_or(NAN);
  a.latency_us = rec.measurement("latency_us").value_or(NAN);
  a.tile_tokens = static_cast<int>(rec.measurement("tile_tokens").value_or(0));
  // Nothing measured: no prediction rather than one made of zeros.
  // The II sums per-tile stages: a once-per-step cost alone (combine's, measured by the
  // combine kernel even where a variant has no ablation kernels) would predict an II of 0.
  const bool per_tile_known = std::any_of(a.costs.stages.begin(), a.costs.stages.end(), [&](Stage s) {
    return s != Stage::q_quant && s != Stage::combine && a.costs.known(s);
  });
  if (per_tile_known) a.prediction = predict_ii(a.graph, a.costs.us);
  return a;
}

nlohmann::json CaseAnalysis::to_json() const {
  nlohmann::json stages = nlohmann::json::array();
  for (Stage s : graph.stages()) {
    const bool once = once_per_step(s);
    nlohmann::json line = {{"stage", std::string(to_string(s))},
                           {"agent", once ? std::string("once per step") : std::string(to_string(graph.agent_of(s)))},
                           {"cost_us", number_or_null(costs.us[s])},
                           {"source", std::string(to_string(costs.source_of(s)))},
                           {"below_zero", costs.known(s) && costs.us[s] < 0},
                           {"slack_us", number_or_null(prediction && !once ? prediction->slack_us[s] : NAN)}};
    stages.push_back(std::move(line));
  }
  nlohmann::json j = {{"operating_point", tilepath::to_json(op)},
                      {"variant", op.variant_label()},
                      {"mma", std::string(to_string(op.mma))},
                      {"tile_tokens", tile_tokens > 0 ? nlohmann::json(tile_tokens) : nlohmann::json(nullptr)},
                      {"stages", stages},
                      {"unknown_stages", stage_names(unknown_stages())},
                      {"measured_ii_us", number_or_null(measured_ii_us)},
                      {"latency_us", number_or_null(latency_us)}};
  if (prediction) {
    j["predicted_ii_us"] = prediction->ii_us;
    j["ii_is_lower_bound"] = ii_is_lower_bound();
    j["limiting_stage"] = std::string(to_string(prediction->limiting_stage));
    j["limiting_agent"] = std::string(to_string(prediction->limiting_agent));
    j["overlap_efficiency"] = number_or_null(overlap_efficiency());
  } else {
    j["predicted_ii_us"] = nullptr;
    j["ii_is_lower_bound"] = nullptr;
    j["limiting_stage"] = nullptr;
    j["limiting_agent"] = nullptr;
    j["overlap_efficiency"] = nullptr;
  }
  return j;
}

std::optional<PredictionRow> prediction_row(const CaseAnalysis& a) {
  if (!a.prediction) return std::nullopt;
  const IIPrediction& p = *a.prediction;
  PredictionRow row;
  row.ii_us = p.ii_us;
  row.limiting_stage = std::string(to_string(p.limiting_stage));
  row.limiting_agent = std::string(to_string(p.limiting_agent));
  row.overlap_efficiency = a.overlap_efficiency();
  row.model = kPredictionModel;
  row.unknown_stages.emplace();
  for (Stage s : a.unknown_stages()) row.unknown_stages->push_back(std::string(to_string(s)));
  nlohmann::json detail = p.to_json();
  detail["cost_sources"] = a.costs.sources_json();
  detail["ii_is_lower_bound"] = a.ii_is_lower_bound();
  row.detail_json = detail.dump();
  return row;
}

}  // namespace tilepath::analysis
