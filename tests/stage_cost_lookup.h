#pragma once
// Reading a plugin's stage-cost list in the plugin tests.

#include <cmath>

#include "backends/abi/tilepath_backend.h"

namespace tilepath::testing {

// The cost of (method, stage) in r's list, NaN when the plugin gave none.
inline double stage_cost(const tp_result& r, int method, int stage) {
  for (int i = 0; i < r.stage_cost_count && r.stage_costs != nullptr; ++i)
    if (r.stage_costs[i].method == method && r.stage_costs[i].stage == stage) return r.stage_costs[i].cost_us;
  return NAN;
}

// Whether r has any cost of this method.
inline bool has_method(const tp_result& r, int method) {
  for (int i = 0; i < r.stage_cost_count && r.stage_costs != nullptr; ++i)
    if (r.stage_costs[i].method == method && std::isfinite(r.stage_costs[i].cost_us)) return true;
  return false;
}

}  // namespace tilepath::testing
