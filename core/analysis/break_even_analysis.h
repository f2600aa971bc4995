#pragma once
// The K8/V8 break-even of a stored case against its K16/V8 control, and the V hidden
// fraction against K16/V16 (core/ii_model.h: break_even, v_hidden_fraction; the
// formulas are in docs/stage-model.md).
//
// Controls: the fastest stored K16/V8 and K16/V16 cases (plain K) of the same shape,
// backend and device (case_match.h, fastest_control).
//
// Units: tiles hold 32, 64 or 128 tokens depending on the variant, so per-tile costs do
// not compare across variants. When both cases report their tile size, the IIs and the
// decomposition are per 1k KV tokens of one kv head's stream ("us_per_1k_tokens");
// otherwise per tile ("us_per_tile"), which compares only when the tiles are equal.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/ii_model.h"
#include "core/store/run_store.h"

namespace tilepath::analysis {

struct BreakEvenAnalysis {
  std::string backend, device;
  OperatingPoint op;                                                     // the K8/V8 case's
  std::int64_t k8v8_case_id = 0, k16v8_case_id = 0, k16v16_case_id = 0;  // 0 = none stored
  std::string k8v8_variant, k16v8_variant, k16v16_variant;
  double t_k16v16_us = NAN, t_k16v8_us = NAN, t_k8v8_us = NAN;  // latencies
  std::string unit = "us_per_tile";            // of the IIs and the decomposition; see the header comment
  double ii_k16v8_us = NAN, ii_k8v8_us = NAN;  // measured tile intervals (the predicted II where none), in unit
  std::string ii_source;                       // "measured", "predicted" or "mixed"
  std::optional<BreakEven> decomposition;      // needs stage costs of both cases
  std::string decomposition_note;              // why there is no decomposition
  double v_hidden_fraction = NAN;              // needs all three latencies

  // {"k8v8_case", "k16v8_case", "k16v16_case", latencies, "unit", IIs, "delta_us",
  //  "unhidden_k8_prep_us", "pipeline_penalty_us", "extra_k16_hbm_us", "v_hidden_fraction", "note"}
  nlohmann::json to_json() const;
};

// The stage costs of a stored case, for cases listed without them (CaseDetail::stage_costs
// off): a list of 100k cases need not hold 1.5 M stage-cost rows for the few dozen it pairs.
using StageCostReader = std::function<std::vector<StageCostRow>(std::int64_t case_id)>;

// The break-even of one K8/V8 case; nullopt when it is not an ok K8/V8 case or no
// K16/V8 control is stored. read_stage_costs, when given, is asked for the costs of the
// two cases it decomposes when they are listed without the costs they have.
std::optional<BreakEvenAnalysis> break_even_for(const CaseSummary& k8v8, const std::vector<CaseSummary>& cases,
                                                const StageCostReader& read_stage_costs = {});

// One row per (backend, device, shape) that has both a K8/V8 and a K16/V8 case,
// using the fastest stored K8/V8 variant (plain K) of the shape.
std::vector<BreakEvenAnalysis> break_even_table(const std::vector<CaseSummary>& cases,
                                                const StageCostReader& read_stage_costs = {});

}  // namespace tilepath::analysis
