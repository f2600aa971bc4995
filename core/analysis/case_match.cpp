#include "core/analysis/case_match.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace tilepath::analysis {
namespace {

double latency(const CaseSummary& c) { return c.record.measurement("latency_us").value_or(NAN); }

}  // namespace

bool in_scope(const CaseSummary& c, const CaseScope& scope) {
  return (scope.backend.empty() || c.backend == scope.backend) && (scope.device.empty() || c.device == scope.device);
}

bool measures(const CaseSummary& c, const OperatingPoint& op) {
  return c.record.status == CaseStatus::ok && c.record.op == op;
}

bool has_stage_costs(const CaseSummary& c) { return c.has_stage_costs || !c.record.stage_costs.empty(); }

std::optional<CaseSummary> find_stored_case(const std::vector<CaseSummary>& cases, const OperatingPoint& op,
                                            const CaseScope& scope) {
  const CaseSummary* best = nullptr;
  for (const CaseSummary& c : cases) {
    if (!in_scope(c, scope) || !measures(c, op)) continue;
    const bool has_costs = has_stage_costs(c);
    const bool best_has_costs = best != nullptr && has_stage_costs(*best);
    if (best == nullptr || (has_costs && !best_has_costs) || (has_costs == best_has_costs && c.case_id > best->case_id))
      best = &c;
  }
  if (best == nullptr) return std::nullopt;
  return *best;
}

std::vector<CaseScope> scopes_measuring(const std::vector<CaseSummary>& cases, const OperatingPoint& op) {
  std::vector<CaseScope> out;
  for (const CaseSummary& c : cases) {
    if (!measures(c, op)) continue;
    CaseScope scope{c.backend, c.device};
    if (std::find(out.begin(), out.end(), scope) == out.end()) out.push_back(std::move(scope));
  }
  return out;
}

bool same_shape(const OperatingPoint& a, const OperatingPoint& b) {
  OperatingPoint variant_free = b;
  variant_free.kv = a.kv;
  variant_free.k_path = a.k_path;
  variant_free.mode = a.mode;
  variant_free.k_repr = a.k_repr;
  variant_free.rope = a.rope;
  variant_free.mma = a.mma;
  return variant_free == a;
}

std::optional<CaseSummary> fastest_control(const std::vector<CaseSummary>& cases, const CaseSummary& of, KvDtype kv) {
  const CaseScope scope{of.backend, of.device};
  const CaseSummary* best = nullptr;
  for (const CaseSummary& c : cases) {
    const OperatingPoint& op = c.record.op;
    if (c.record.status != CaseStatus::ok || op.kv != kv || op.k_repr != KRepr::plain || !in_scope(c, scope)) continue;
    if (!same_shape(op, of.record.op) || !std::isfinite(latency(c))) continue;
    // A case of `of`'s matrix instruction family beats any of the other family: both kernels
    // then have the same structure, and their stage costs (the mma_sync kernels') can be
    // compared; the other family is the control only where `of`'s has none.
    const auto rank = [&](const CaseSummary& x) { return std::pair{x.record.op.mma != of.record.op.mma, latency(x)}; };
    if (best == nullptr || rank(c) < rank(*best)) best = &c;
  }
  if (best == nullptr) return std::nullopt;
  return *best;
}

}  // namespace tilepath::analysis
