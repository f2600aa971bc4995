#include "core/analysis/break_even_analysis.h"

#include <cmath>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/analysis/case_analysis.h"
#include "core/analysis/case_match.h"

namespace tilepath::analysis {
namespace {

double latency(const CaseSummary& c) { return c.record.measurement("latency_us").value_or(NAN); }

nlohmann::json number_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

nlohmann::json case_or_null(std::int64_t id) { return id > 0 ? nlohmann::json(id) : nlohmann::json(nullptr); }

// The II prediction of a case with every stage cost multiplied by `scale`.
std::optional<IIPrediction> scaled_prediction(const CaseAnalysis& a, double scale) {
  if (!a.prediction) return std::nullopt;
  StageCosts costs = a.costs.us;
  for (double& c : costs.us) c *= scale;
  return predict_ii(a.graph, costs);
}

// The analysis of a case, its stage costs read when it is listed without them.
CaseAnalysis analyze_with_stage_costs(const CaseSummary& c, const StageCostReader& read_stage_costs) {
  if (!read_stage_costs || !c.record.stage_costs.empty() || !c.has_stage_costs) return analyze_case(c.record);
  CaseRecord rec = c.record;
  rec.stage_costs = read_stage_costs(c.case_id);
  return analyze_case(rec);
}

}  // namespace

std::optional<BreakEvenAnalysis> break_even_for(const CaseSummary& k8v8, const std::vector<CaseSummary>& cases,
                                                const StageCostReader& read_stage_costs) {
  if (k8v8.record.status != CaseStatus::ok || k8v8.record.op.kv != KvDtype::k8v8) return std::nullopt;
  const std::optional<CaseSummary> k16v8 = fastest_control(cases, k8v8, KvDtype::k16v8);
  if (!k16v8) return std::nullopt;
  const std::optional<CaseSummary> k16v16 = fastest_control(cases, k8v8, KvDtype::k16v16);

  BreakEvenAnalysis b;
  b.backend = k8v8.backend;
  b.device = k8v8.device;
  b.op = k8v8.record.op;
  b.k8v8_case_id = k8v8.case_id;
  b.k16v8_case_id = k16v8->case_id;
  b.k8v8_variant = k8v8.record.op.variant_label();
  b.k16v8_variant = k16v8->record.op.variant_label();
  b.t_k8v8_us = latency(k8v8);
  b.t_k16v8_us = latency(*k16v8);
  if (k16v16) {
    b.k16v16_case_id = k16v16->case_id;
    b.k16v16_variant = k16v16->record.op.variant_label();
    b.t_k16v16_us = latency(*k16v16);
    b.v_hidden_fraction = v_hidden_fraction(b.t_k16v16_us, b.t_k16v8_us, b.t_k8v8_us);
  }

  const CaseAnalysis a8 = analyze_with_stage_costs(k8v8, read_stage_costs);
  const CaseAnalysis a16 = analyze_with_stage_costs(*k16v8, read_stage_costs);
  const bool per_token = a8.tile_tokens > 0 && a16.tile_tokens > 0;
  b.unit = per_token ? "us_per_1k_tokens" : "us_per_tile";
  const double scale8 = per_token ? 1000.0 / a8.tile_tokens : 1.0;
  const double scale16 = per_token ? 1000.0 / a16.tile_tokens : 1.0;
  const std::optional<IIPrediction> p8 = scaled_prediction(a8, scale8);
  const std::optional<IIPrediction> p16 = scaled_prediction(a16, scale16);

  // The measured tile interval; the predicted II only where none was measured.
  auto interval = [](const CaseAnalysis& a, const std::optional<IIPrediction>& p, double scale, bool& measured) {
    measured = std::isfinite(a.measured_ii_us);
    if (measured) return a.measured_ii_us * scale;
    return p ? p->ii_us : NAN;
  };
  bool measured8 = false, measured16 = false;
  b.ii_k8v8_us = interval(a8, p8, scale8, measured8);
  b.ii_k16v8_us = interval(a16, p16, scale16, measured16);
  b.ii_source = measured8 && measured16 ? "measured" : (!measured8 && !measured16 ? "predicted" : "mixed");

  if (p8 && p16 && std::isfinite(b.ii_k8v8_us) && std::isfinite(b.ii_k16v8_us)) {
    b.decomposition = break_even(*p8, b.ii_k8v8_us, *p16, b.ii_k16v8_us);
  } else if (!p8 || !p16) {
    b.decomposition_note = std::string("no stage costs stored for the ") + (!p8 ? "K8/V8" : "K16/V8") + " case #" +
                           std::to_string(!p8 ? k8v8.case_id : k16v8->case_id);
  } else {
    b.decomposition_note = "no tile interval, measured or predicted";
  }
  return b;
}

std::vector<BreakEvenAnalysis> break_even_table(const std::vector<CaseSummary>& cases,
                                                const StageCostReader& read_stage_costs) {
  // The fastest ok K8/V8 case (plain K) per (backend, device, shape); the shape is the
  // operating point with its variant fields set to one value.
  auto shape_of = [](const OperatingPoint& op) {
    OperatingPoint s = op;
    s.kv = KvDtype::k8v8;
    s.k_path = KPath::transform;
    s.mode = TransformMode::full;
    s.k_repr = KRepr::plain;
    s.rope = RopeLayout::post_rope;
    return s.key();
  };
  using Key = std::tuple<std::string, std::string, std::string>;
  std::map<Key, const CaseSummary*> fastest;
  // The K16 controls of each (backend, device, shape), in stored order: break_even_for
  // looks for its controls among these instead of among every case (100k cases, a few
  // dozen shapes). Cases of the same shape (case_match's same_shape) share the key.
  std::map<Key, std::vector<const CaseSummary*>> controls;
  for (const CaseSummary& c : cases) {
    const OperatingPoint& op = c.record.op;
    if (c.record.status != CaseStatus::ok || op.k_repr != KRepr::plain) continue;
    if (op.kv == KvDtype::k16v8 || op.kv == KvDtype::k16v16) {
      controls[{c.backend, c.device, shape_of(op)}].push_back(&c);
      continue;
    }
    if (op.kv != KvDtype::k8v8 || !std::isfinite(latency(c))) continue;
    const CaseSummary*& slot = fastest[{c.backend, c.device, shape_of(op)}];
    if (slot == nullptr || latency(c) < latency(*slot)) slot = &c;
  }
  std::vector<BreakEvenAnalysis> rows;
  for (const auto& [key, k8v8] : fastest) {
    std::vector<CaseSummary> candidates;
    if (const auto it = controls.find(key); it != controls.end())
      for (const CaseSummary* c : it->second) candidates.push_back(*c);
    if (auto row = break_even_for(*k8v8, candidates, read_stage_costs)) rows.push_back(std::move(*row));
  }
  return rows;
}

nlohmann::json BreakEvenAnalysis::to_json() const {
  const BreakEven* d = decomposition ? &*decomposition : nullptr;
  return {{"k8v8_case", case_or_null(k8v8_case_id)},
          {"k16v8_case", case_or_null(k16v8_case_id)},
          {"k16v16_case", case_or_null(k16v16_case_id)},
          {"k8v8_variant", k8v8_variant},
          {"k16v8_variant", k16v8_variant},
          {"k16v16_variant", k16v16_case_id > 0 ? nlohmann::json(k16v16_variant) : nlohmann::json(nullptr)},
          {"t_k8v8_us", number_or_null(t_k8v8_us)},
          {"t_k16v8_us", number_or_null(t_k16v8_us)},
          {"t_k16v16_us", number_or_null(t_k16v16_us)},
          {"latency_delta_us", number_or_null(t_k8v8_us - t_k16v8_us)},
          {"unit", unit},
          {"ii_source", ii_source},
          {"ii_k8v8", number_or_null(ii_k8v8_us)},
          {"ii_k16v8", number_or_null(ii_k16v8_us)},
          {"delta", d ? number_or_null(d->delta_us) : nlohmann::json(nullptr)},
          {"unhidden_k8_prep", d ? number_or_null(d->unhidden_k8_prep_us) : nlohmann::json(nullptr)},
          {"pipeline_penalty", d ? number_or_null(d->pipeline_penalty_us) : nlohmann::json(nullptr)},
          {"extra_k16_hbm", d ? number_or_null(d->extra_k16_hbm_us) : nlohmann::json(nullptr)},
          {"v_hidden_fraction", number_or_null(v_hidden_fraction)},
          {"note", decomposition_note}};
}

}  // namespace tilepath::analysis
