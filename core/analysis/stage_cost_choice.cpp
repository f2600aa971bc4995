#include "core/analysis/stage_cost_choice.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace tilepath::analysis {
namespace {

// Lower = preferred (the order of the rule in the header).
int rank(CostSource s) { return static_cast<int>(s); }

}  // namespace

std::string_view to_string(CostSource s) {
  switch (s) {
    case CostSource::isolated:
      return "isolated";
    case CostSource::removed:
      return "removed";
    case CostSource::doubled:
      return "doubled";
    case CostSource::model:
      return "model";
    case CostSource::unknown:
      return "unknown";
  }
  return "unknown";
}

CostSource source_of(CostMethod m) {
  switch (m) {
    case CostMethod::isolated:
      return CostSource::isolated;
    case CostMethod::removed:
      return CostSource::removed;
    case CostMethod::doubled:
      return CostSource::doubled;
    case CostMethod::model:
      return CostSource::model;
  }
  return CostSource::unknown;
}

ChosenStageCosts::ChosenStageCosts() { source.fill(CostSource::unknown); }

bool ChosenStageCosts::any_known() const {
  for (Stage s : stages)
    if (known(s)) return true;
  return false;
}

bool ChosenStageCosts::model_only() const {
  bool any = false;
  for (Stage s : stages) {
    if (!known(s)) continue;
    if (source_of(s) != CostSource::model) return false;
    any = true;
  }
  return any;
}

std::vector<Stage> ChosenStageCosts::unknown() const {
  std::vector<Stage> out;
  for (Stage s : stages)
    if (!known(s)) out.push_back(s);
  return out;
}

nlohmann::json ChosenStageCosts::sources_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (Stage s : stages) j[std::string(tilepath::to_string(s))] = std::string(to_string(source_of(s)));
  return j;
}

ChosenStageCosts choose_stage_costs(const std::vector<StageCostRow>& rows, const StageGraph& graph) {
  ChosenStageCosts chosen;
  chosen.stages = graph.stages();
  for (const StageCostRow& row : rows) {
    if (!std::isfinite(row.cost_us) || !graph.has_stage(row.stage)) continue;
    const CostSource candidate = source_of(row.method);
    const int i = static_cast<int>(row.stage);
    if (rank(candidate) < rank(chosen.source[i])) {
      chosen.source[i] = candidate;
      chosen.us.us[i] = row.cost_us;
    }
  }
  return chosen;
}

}  // namespace tilepath::analysis
