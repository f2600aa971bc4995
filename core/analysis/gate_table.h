#pragma once
// The numerical gate's stored results as a table (docs/gate.md): per representation ×
// key distribution the five metrics of one case, their thresholds and pass/fail; per
// (representation, distribution) the error against context over every stored case; and,
// for the cases run with decode steps, the error against step from their gate.json.
// `tilepath gate --db` stores one case per representation in a run of the backend
// "gate"; a speed run may carry the same rows for the gate on its own inputs.
//
// A gate row is a quality row of one of the five gate metrics whose distribution is
// neither empty nor "random": "random" rows are each speed run's kernel check (the
// kernel against an emulation of its own arithmetic), as are the kernel_check_* rows;
// neither says how far the representation is from full precision.

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/store/run_store.h"

namespace tilepath::analysis {

enum class GateMetric { rel_l2, max_abs, kl, top8, top32 };
inline constexpr std::array<GateMetric, 5> kGateMetrics = {GateMetric::rel_l2, GateMetric::max_abs, GateMetric::kl,
                                                           GateMetric::top8, GateMetric::top32};
std::string_view to_string(GateMetric m);
std::optional<GateMetric> parse_gate_metric(std::string_view name);
// top8 and top32 pass when the worst row is at least the threshold; the others at most.
bool gate_metric_at_least(GateMetric m);
// Whether a quality row is a gate result (see the top of this file).
bool is_gate_row(const QualityRow& q);
// Whether every gate row of the record passed; nullopt when it has none.
std::optional<bool> gate_passed(const CaseRecord& rec);

// The flags after the numbers: a GUI table of 100k cases holds five of these per case.
struct GateMetricResult {
  double worst = NAN;      // the row's value: the worst (request, kv head) row
  double median = NAN;     // gate_<metric>_median; NaN when not stored
  double threshold = NAN;  // NaN: not gated
  bool stored = false;     // the case has this metric's row
  bool passed = true;
};

// One stored case's gate result on one distribution.
struct GateCaseResult {
  std::int64_t case_id = 0, run_id = 0;
  std::string backend, device;
  OperatingPoint op;
  std::string representation;  // quality::representation_label(op)
  std::string distribution;
  std::optional<std::uint64_t> seed;        // the case key's "|seed=N"
  std::array<GateMetricResult, 5> metrics;  // indexed by GateMetric
  int steps = 0;                            // the case key's "|steps=N": decode steps after the context
  int rows_checked = -1, rows_total = -1;   // gate_rows_checked / gate_rows_total; -1 when not stored
  bool passed = true;                       // every stored row passed
  bool has_gate_json = false;               // the case lists a gate.json artifact

  const GateMetricResult& metric(GateMetric m) const { return metrics[static_cast<std::size_t>(m)]; }
  int context() const { return op.context; }
};

// The gate results a stored case carries: one per distribution of its gate rows.
std::vector<GateCaseResult> gate_results(const CaseSummary& c);

// One decode step of a gate.json (GateResult::to_json()).
struct GateStepPoint {
  int step = 0, tokens = 0;
  bool passed = true;
  std::array<double, 5> worst{NAN, NAN, NAN, NAN, NAN}, median{NAN, NAN, NAN, NAN, NAN};  // by GateMetric
  double value(GateMetric m) const { return worst[static_cast<std::size_t>(m)]; }
};
// The "steps" of a gate.json, in order. Throws std::runtime_error naming what is missing
// when the text is not a gate result.
std::vector<GateStepPoint> parse_gate_steps(const std::string& gate_json);

// The error against decode step of one case run with steps.
struct GateStepSeries {
  GateCaseResult result;  // the case (its metrics are the worst step's)
  std::vector<GateStepPoint> points;
};

// What one row of the table stands for: a representation at one row shape, from one source.
struct GateRowKey {
  std::string representation;
  std::string backend;  // "gate" for `tilepath gate`; a speed run's backend otherwise
  int head_dim = 0, q_heads = 0, kv_heads = 0;
  auto operator<=>(const GateRowKey&) const = default;
};

struct GateCell {
  GateCaseResult shown;                // the largest context's case; of equal contexts the last stored
  std::vector<std::int64_t> case_ids;  // every case of the cell, in context_series order
};

struct GateRow {
  GateRowKey key;
  // The representation; "<representation> on <backend>" for a speed run's results, and
  // ", D <d>, Hq/Hk <q>/<k>" after it when the table holds more than one shape.
  std::string label;
  std::map<std::string, GateCell> cells;  // by distribution
  // Per distribution, every case: by context, then case id (several seeds or step
  // counts at one context are separate points).
  std::map<std::string, std::vector<GateCaseResult>> context_series;
  // Every case with steps > 0 whose gate.json could be read, by distribution, context, case id.
  std::vector<GateStepSeries> step_series;

  const GateCell* cell(const std::string& distribution) const;
};

struct GateTable {
  std::vector<std::string> distributions;  // the columns, sorted
  std::vector<GateRow> rows;               // sorted by label
  // gate.json artifacts that could not be read ("case 12: ..."); their steps are missing.
  std::vector<std::string> problems;

  bool empty() const { return rows.empty(); }
  const GateRow* row(std::string_view label) const;
};

// The text of a stored case's gate.json artifact; nullopt when it has none.
using GateJsonReader = std::function<std::optional<std::string>(std::int64_t case_id)>;
// The gate.json of a record loaded with its artifacts; nullopt when it has none.
std::optional<std::string> gate_json_artifact(const CaseRecord& rec);

// Every case with gate rows goes into the table. read_gate_json is asked only for the
// cases run with steps (the artifact of the others holds one step); without it the
// table has no step series.
GateTable build_gate_table(const std::vector<CaseSummary>& cases, const GateJsonReader& read_gate_json = {});
// The step series that build_gate_table adds with a reader, added to a table built without
// one (once): the table of a large list can be built on another thread and its few
// gate.json artifacts read where the reader's connection lives.
void add_step_series(GateTable& table, const GateJsonReader& read_gate_json);

}  // namespace tilepath::analysis
