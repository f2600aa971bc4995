#pragma once
// Plugin-side helpers for the ABI 2.2 gate fields, for C++ plugins that link
// tilepath_numerics (the host never includes it): which key distribution the host asked
// for and, from ABI 2.5, with which parameters; writing a case's gate metrics and check
// row counts into its tp_result, only where the host's (possibly older) struct has the fields.

#include <cstring>
#include <optional>
#include <string>

#include "backends/abi/tilepath_plugin.h"
#include "core/numerics/decode_problem.h"
#include "core/numerics/gate_metrics.h"
#include "core/numerics/key_model.h"

namespace tilepath::plugin {

// The key model the host asked for: its distribution's parameters from
// options->key_model_json, or the built-in models/keys/<name>.json when the host is older
// or passes NULL. nullopt with a reason for an unknown name or a file that does not parse
// or is not of the distribution's kind.
struct RequestedKeys {
  numerics::KeyDistribution dist = numerics::KeyDistribution::gaussian;
  numerics::KeyModel model;
};
inline std::optional<RequestedKeys> requested_keys(const tp_run_options* options, std::string* why = nullptr) {
  RequestedKeys keys;
  try {
    if (TP_HAS_FIELD(options, tp_run_options, key_distribution) && options->key_distribution != nullptr)
      keys.dist = numerics::parse_key_distribution(options->key_distribution, "key_distribution");
    if (TP_HAS_FIELD(options, tp_run_options, key_model_json) && options->key_model_json != nullptr) {
      const std::string stem(numerics::to_string(keys.dist));
      keys.model = numerics::parse_key_model_text(options->key_model_json, stem, "key_model_json");
      numerics::require_kind(keys.model, keys.dist, "key_model_json");
    } else {
      keys.model = numerics::builtin_key_model(keys.dist);
    }
  } catch (const std::exception& e) {
    if (why != nullptr) *why = e.what();
    return std::nullopt;
  }
  return keys;
}

// For plugins that generate keys only with their built-in parameters: the options' key
// distribution (gaussian when the host is older or passes NULL); nullopt with a reason
// for an unknown name, and for a key_model_json whose parameters differ from the built-in
// file's (never silently other inputs than the host gates with).
inline std::optional<numerics::KeyDistribution> key_distribution(const tp_run_options* options,
                                                                 std::string* why = nullptr) {
  const auto keys = requested_keys(options, why);
  if (!keys) return std::nullopt;
  if (!keys->model.same_parameters(numerics::builtin_key_model(keys->dist))) {
    if (why != nullptr)
      *why = "key_model_json: this plugin generates '" + std::string(numerics::to_string(keys->dist)) +
             "' keys only with the parameters it was built with (models/keys/" +
             std::string(numerics::to_string(keys->dist)) +
             ".json at build time); the host's differ: rebuild the plugin from the same models/";
    return std::nullopt;
  }
  return keys->dist;
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
