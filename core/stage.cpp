#include "core/stage.h"

#include <cmath>
#include <limits>
#include <string>

#include "core/enum_names.h"
#include "core/operating_point.h"

namespace tilepath {
namespace {

// Agents are core's own (no ABI enumeration), so they are named here.
constexpr std::array<std::string_view, kAgentCount> kAgentNames = {"memory", "transform", "qk_mma", "softmax",
                                                                   "pv_mma"};

template <std::size_t N>
int index_of(const std::array<std::string_view, N>& names, std::string_view s, const char* field) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == s) return static_cast<int>(i);
  }
  std::string allowed;
  for (auto n : names) allowed += (allowed.empty() ? "" : "|") + std::string(n);
  throw ValidationError(field, "unknown value '" + std::string(s) + "'", allowed);
}

}  // namespace

std::string_view to_string(Stage s) { return names::name_of(s); }
std::string_view to_string(Agent a) { return kAgentNames.at(static_cast<int>(a)); }
std::string_view to_string(CostMethod m) { return names::name_of(m); }

Stage parse_stage(std::string_view s) { return names::parse<Stage>(s, "stage"); }
Agent parse_agent(std::string_view s) { return static_cast<Agent>(index_of(kAgentNames, s, "agent")); }
CostMethod parse_cost_method(std::string_view s) { return names::parse<CostMethod>(s, "method"); }

StageCosts::StageCosts() { us.fill(std::numeric_limits<double>::quiet_NaN()); }

bool StageCosts::has(Stage s) const { return std::isfinite(us[static_cast<int>(s)]); }

double StageCosts::modelled(Stage s) const { return has(s) && (*this)[s] > 0 ? (*this)[s] : 0.0; }

}  // namespace tilepath
