#pragma once
// Which stored case measures an operating point, and which cases are its controls.
// One rule for the CLI (`tilepath analyze`) and the GUI.
//
// A case *measures* an operating point when its status is ok and its operating point
// equals it in every field. Each field either selects another kernel (kv, k_path,
// mode, k_repr, rope, scale, head_dim, q_heads, kv_heads, page_size, splits, mma) or
// changes the work that was timed (batch, context, context_lengths, cache), so a
// case that differs in any of them measured something else.

#include <optional>
#include <string>
#include <vector>

#include "core/store/run_store.h"

namespace tilepath::analysis {

// Which backend and device a case must come from; an empty field matches any.
struct CaseScope {
  std::string backend, device;
  bool operator==(const CaseScope&) const = default;
};

bool in_scope(const CaseSummary& c, const CaseScope& scope);
bool measures(const CaseSummary& c, const OperatingPoint& op);
// The case has stage costs: it holds them, or a list read without them says it has them
// (CaseSummary::has_stage_costs).
bool has_stage_costs(const CaseSummary& c);

// The stored case for op: among the cases in scope that measure it, one with stage
// costs before one without, then the newest (largest case id).
std::optional<CaseSummary> find_stored_case(const std::vector<CaseSummary>& cases, const OperatingPoint& op,
                                            const CaseScope& scope = {});

// The (backend, device) pairs holding a case that measures op, in order of first appearance.
std::vector<CaseScope> scopes_measuring(const std::vector<CaseSummary>& cases, const OperatingPoint& op);

// Same shape: equal in every field except the variant fields kv, k_path, mode,
// k_repr, rope and mma (what a dtype control compares across).
bool same_shape(const OperatingPoint& a, const OperatingPoint& b);

// The control case of a comparison: an ok case of dtype control `kv` with plain K, of
// the same shape, backend and device as `of`, the fastest such (lowest latency_us) of
// `of`'s matrix instruction family (mma) where that family has one, else of the other.
std::optional<CaseSummary> fastest_control(const std::vector<CaseSummary>& cases, const CaseSummary& of, KvDtype kv);

}  // namespace tilepath::analysis
