#pragma once
// Plugin-side helpers for the ABI 2.2 gate fields, for C++ plugins that link
// tilepath_numerics (the host never includes it): which key distribution the host asked
// for, and writing a case's gate metrics and check row counts into its tp_result, only
// where the host's (possibly older) struct has the fields.

#include <cstring>
#include <optional>
#include <string>

#include "backends/abi/tilepath_plugin.h"
#include "core/numerics/decode_problem.h"
#include "core/numerics/gate_metrics.h"

namespace tilepath::plugin {

// The options' key distribution (gaussian when the host is older or passes NULL);
// nullopt with a reason naming the allowed values when the name is unknown.
inline std::optional<numerics::KeyDistribution> key_distribution(const tp_run_options* options,
                                                                 std::string* why = nullptr) {
  if (!TP_HAS_FIELD(options, tp_run_options, key_distribution) || options->key_distribution == nullptr)
    return numerics::KeyDistribution::gaussian;
  try {
    return numerics::parse_key_distribution(options->key_distribution, "key_distribution");
  } catch (const std::exception& e) {
    if (why != nullptr) *why = e.what();
    return std::nullopt;
  }
}

inline void set_key_distribution(tp_result* out, numerics::KeyDistribution dist) {
  if (TP_HAS_FIELD(out, tp_result, key_distribution)) copy_text(out->key_distribution, numerics::to_string(dist));
}

inline void set_check_rows(tp_result* out, int checked, int total) {
  if (!TP_HAS_FIELD(out, tp_result, check_rows_total)) return;
  out->check_rows_checked = checked;
  out->check_rows_total = total;
}

// Copies summarised gate metrics (rows_total set by the caller) into the result.
inline void set_gate(tp_result* out, const numerics::GateMetrics& m) {
  if (!TP_HAS_FIELD(out, tp_result, gate_rows_total)) return;
  auto value = [](const numerics::GateSummary& s) { return tp_gate_value{s.worst, s.median}; };
  out->gate_rel_l2 = value(m.rel_l2);
  out->gate_max_abs = value(m.max_abs);
  out->gate_kl = value(m.kl);
  out->gate_top8 = value(m.top8);
  out->gate_top32 = value(m.top32);
  out->gate_rows_checked = static_cast<int32_t>(m.rows.size());
  out->gate_rows_total = m.rows_total;
}

}  // namespace tilepath::plugin
