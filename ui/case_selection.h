#pragma once
// Picking stored cases for a view: which case measures the edited operating
// point, and which stage costs of a case count as "measured".

#include <optional>
#include <string>
#include <vector>

#include "core/store/run_store.h"

namespace tilepath::ui {

// Stage costs of a case, preferring real measurements over model predictions:
// isolated, then removed, then doubled ablations; a stage only a model (the sim
// backend) reported falls back to the model value. *fromModelOnly is true when
// every cost came from a model.
StageCosts measuredStageCosts(const CaseRecord& rec, bool* fromModelOnly = nullptr);

// Same variant (kv, path, mode, k_repr) and same shape (batch, context, heads,
// head dim, page size, cache state). Status ok cases only.
bool sameCaseShape(const OperatingPoint& a, const OperatingPoint& b);

// The newest ok case matching op (optionally restricted to one backend), or nullopt.
std::optional<CaseSummary> findMatchingCase(const std::vector<CaseSummary>& cases, const OperatingPoint& op,
                                            const std::string& backend = "");

// A case label for lists: "#12 sim k8v8/transform/full B=64 S=4096 cold".
std::string caseLabel(const CaseSummary& c);

}  // namespace tilepath::ui
