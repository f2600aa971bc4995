#include "ui/case_selection.h"

#include <cmath>
#include <sstream>

namespace tilepath::ui {

StageCosts measuredStageCosts(const CaseRecord& rec, bool* fromModelOnly) {
  // Lower rank = preferred source of a stage cost.
  auto rank = [](CostMethod m) {
    switch (m) {
      case CostMethod::isolated:
        return 0;
      case CostMethod::removed:
        return 1;
      case CostMethod::doubled:
        return 2;
      case CostMethod::model:
        return 3;
    }
    return 4;
  };
  StageCosts costs;
  std::array<int, kStageCount> best_rank;
  best_rank.fill(99);
  for (const StageCostRow& row : rec.stage_costs) {
    if (!std::isfinite(row.cost_us)) continue;
    int idx = static_cast<int>(row.stage);
    if (idx < 0 || idx >= kStageCount) continue;
    int r = rank(row.method);
    if (r < best_rank[idx]) {
      best_rank[idx] = r;
      costs.us[idx] = row.cost_us;
    }
  }
  if (fromModelOnly) {
    bool any = false, only_model = true;
    for (int r : best_rank) {
      if (r == 99) continue;
      any = true;
      if (r != 3) only_model = false;
    }
    *fromModelOnly = any && only_model;
  }
  return costs;
}

bool sameCaseShape(const OperatingPoint& a, const OperatingPoint& b) {
  return a.kv == b.kv && a.k_path == b.k_path && a.mode == b.mode && a.k_repr == b.k_repr && a.batch == b.batch &&
         a.context == b.context && a.q_heads == b.q_heads && a.kv_heads == b.kv_heads && a.head_dim == b.head_dim &&
         a.page_size == b.page_size && a.cache == b.cache;
}

std::optional<CaseSummary> findMatchingCase(const std::vector<CaseSummary>& cases, const OperatingPoint& op,
                                            const std::string& backend) {
  std::optional<CaseSummary> best;
  for (const CaseSummary& c : cases) {
    if (c.record.status != CaseStatus::ok) continue;
    if (!backend.empty() && c.backend != backend) continue;
    if (!sameCaseShape(c.record.op, op)) continue;
    // Prefer a case with stage costs, then the newest.
    bool has_costs = !c.record.stage_costs.empty();
    bool best_has_costs = best && !best->record.stage_costs.empty();
    if (!best || (has_costs && !best_has_costs) || (has_costs == best_has_costs && c.case_id > best->case_id)) best = c;
  }
  return best;
}

std::string caseLabel(const CaseSummary& c) {
  const OperatingPoint& op = c.record.op;
  std::ostringstream out;
  out << '#' << c.case_id << ' ' << c.backend << ' ' << op.variant_label() << " B=" << op.batch << " S=" << op.context
      << ' ' << (op.cache == CacheState::l2_warm ? "warm" : "cold");
  return out.str();
}

}  // namespace tilepath::ui
