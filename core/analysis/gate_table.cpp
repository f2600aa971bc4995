#include "core/analysis/gate_table.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <iterator>
#include <set>
#include <stdexcept>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/quality/gate.h"

namespace tilepath::analysis {
namespace {

constexpr std::size_t index(GateMetric m) { return static_cast<std::size_t>(m); }

// The number after the last `field` ("|seed=") in a case key, when the key has one. Found
// forwards (find looks for the field's first character with memchr; rfind compares at every
// position): the gate table reads two fields of 100k keys.
std::optional<std::uint64_t> key_number(const std::string& key, std::string_view field) {
  std::size_t at = std::string::npos;
  for (std::size_t next = key.find(field); next != std::string::npos; next = key.find(field, next + 1)) at = next;
  if (at == std::string::npos) return std::nullopt;
  const char* begin = key.data() + at + field.size();
  const char* end = key.data() + key.size();
  std::uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr == begin) return std::nullopt;
  return value;
}

double json_number(const nlohmann::json& j) { return j.is_number() ? j.get<double>() : NAN; }

std::string row_label(const GateRowKey& key, bool several_shapes) {
  std::string label = key.representation;
  if (key.backend != "gate") label += " on " + key.backend;
  if (several_shapes)
    label += ", D " + std::to_string(key.head_dim) + ", Hq/Hk " + std::to_string(key.q_heads) + "/" +
             std::to_string(key.kv_heads);
  return label;
}

}  // namespace

std::string_view to_string(GateMetric m) {
  switch (m) {
    case GateMetric::rel_l2:
      return "rel_l2";
    case GateMetric::max_abs:
      return "max_abs";
    case GateMetric::kl:
      return "kl";
    case GateMetric::top8:
      return "top8";
    case GateMetric::top32:
      return "top32";
  }
  return "?";
}

std::optional<GateMetric> parse_gate_metric(std::string_view name) {
  for (GateMetric m : kGateMetrics)
    if (to_string(m) == name) return m;
  return std::nullopt;
}

bool gate_metric_at_least(GateMetric m) { return m == GateMetric::top8 || m == GateMetric::top32; }

bool is_gate_row(const QualityRow& q) {
  return parse_gate_metric(q.metric).has_value() && !q.distribution.empty() && q.distribution != "random";
}

std::optional<bool> gate_passed(const CaseRecord& rec) {
  std::optional<bool> passed;
  for (const QualityRow& q : rec.quality)
    if (is_gate_row(q)) passed = passed.value_or(true) && q.passed;
  return passed;
}

namespace {

// The distinct distributions of a record's gate rows, sorted: those of gate_results(c), in
// its order, without making the results.
std::vector<std::string_view> gate_distributions(const CaseRecord& rec) {
  std::vector<std::string_view> out;
  for (const QualityRow& q : rec.quality)
    if (is_gate_row(q) && std::find(out.begin(), out.end(), q.distribution) == out.end()) out.push_back(q.distribution);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<GateCaseResult> gate_results(const CaseSummary& c) {
  // gate_<metric>_median, by GateMetric: looked up for every gate row of 100k cases.
  static const std::array<std::string, 5> kMedianNames = [] {
    std::array<std::string, 5> names;
    for (GateMetric m : kGateMetrics) names[index(m)] = "gate_" + std::string(to_string(m)) + "_median";
    return names;
  }();
  const CaseRecord& rec = c.record;
  std::vector<GateCaseResult> out;  // one per distribution (a case has one or a few)
  for (const QualityRow& q : rec.quality) {
    if (!is_gate_row(q)) continue;
    auto it =
        std::find_if(out.begin(), out.end(), [&](const GateCaseResult& r) { return r.distribution == q.distribution; });
    if (it == out.end()) {
      GateCaseResult& r = out.emplace_back();
      r.case_id = c.case_id;
      r.run_id = c.run_id;
      r.backend = c.backend;
      r.device = c.device;
      r.op = rec.op;
      r.representation = quality::representation_label(rec.op);
      r.distribution = q.distribution;
      r.seed = key_number(rec.case_key, "|seed=");
      r.steps = static_cast<int>(key_number(rec.case_key, "|steps=").value_or(0));
      r.rows_checked = static_cast<int>(rec.measurement("gate_rows_checked").value_or(-1));
      r.rows_total = static_cast<int>(rec.measurement("gate_rows_total").value_or(-1));
      for (const ArtifactInfo& a : c.artifacts) r.has_gate_json = r.has_gate_json || a.name == "gate.json";
      it = std::prev(out.end());
    }
    GateCaseResult& r = *it;
    const GateMetric metric = *parse_gate_metric(q.metric);
    GateMetricResult& m = r.metrics[index(metric)];
    m.stored = true;
    m.worst = q.value;
    m.threshold = q.threshold;
    m.passed = q.passed;
    m.median = rec.measurement(kMedianNames[index(metric)]).value_or(NAN);
    r.passed = r.passed && q.passed;
  }
  std::sort(out.begin(), out.end(),
            [](const GateCaseResult& a, const GateCaseResult& b) { return a.distribution < b.distribution; });
  return out;
}

std::vector<GateStepPoint> parse_gate_steps(const std::string& gate_json) {
  try {
    const nlohmann::json j = nlohmann::json::parse(gate_json);
    if (!j.is_object() || !j.contains("steps") || !j["steps"].is_array())
      throw std::runtime_error("gate.json has no \"steps\" array");
    std::vector<GateStepPoint> out;
    for (const nlohmann::json& s : j["steps"]) {
      if (!s.is_object() || !s.contains("step") || !s.contains("metrics") || !s["metrics"].is_object())
        throw std::runtime_error("gate.json: a step without \"step\" and \"metrics\"");
      GateStepPoint p;
      p.step = s["step"].get<int>();
      p.tokens = s.value("tokens", 0);
      p.passed = s.value("passed", true);
      const nlohmann::json& m = s["metrics"];
      for (GateMetric metric : kGateMetrics) {
        const auto it = m.find(std::string(to_string(metric)));
        if (it == m.end() || !it->is_object()) continue;
        if (const auto w = it->find("worst"); w != it->end()) p.worst[index(metric)] = json_number(*w);
        if (const auto md = it->find("median"); md != it->end()) p.median[index(metric)] = json_number(*md);
      }
      out.push_back(p);
    }
    return out;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("gate.json: ") + e.what());
  }
}

std::optional<std::string> gate_json_artifact(const CaseRecord& rec) {
  for (const Artifact& a : rec.artifacts)
    if (a.name == "gate.json") return std::string(a.data.begin(), a.data.end());
  return std::nullopt;
}

const GateCell* GateRow::cell(const std::string& distribution) const {
  const auto it = cells.find(distribution);
  return it == cells.end() ? nullptr : &it->second;
}

const GateRow* GateTable::row(std::string_view label) const {
  for (const GateRow& r : rows)
    if (r.label == label) return &r;
  return nullptr;
}

GateTable build_gate_table(const std::vector<CaseSummary>& cases, const GateJsonReader& read_gate_json) {
  GateTable table;
  std::map<GateRowKey, GateRow> rows;
  std::set<std::string> distributions;
  std::set<std::tuple<int, int, int>> shapes;
  // Where each result goes is found before any result is made: the series of a 100k-case
  // table hold ~150k results of ~400 bytes, each moved once into a series sized up front, at
  // its place (by context, then case id), rather than grown and then sorted.
  struct Place {
    std::vector<GateCaseResult>* series;
    int context;
    std::int64_t case_id;
    std::size_t at = 0;  // in series
  };
  std::vector<Place> places;  // per result: case by case, each case's in gate_results' order
  for (const CaseSummary& c : cases) {
    const OperatingPoint& op = c.record.op;
    const std::vector<std::string_view> case_distributions = gate_distributions(c.record);
    if (case_distributions.empty()) continue;
    GateRowKey key{quality::representation_label(op), c.backend, op.head_dim, op.q_heads, op.kv_heads};
    auto [row, added] = rows.try_emplace(key);
    if (added) row->second.key = std::move(key);
    shapes.emplace(op.head_dim, op.q_heads, op.kv_heads);
    for (std::string_view d : case_distributions) {
      const std::string& distribution = *distributions.emplace(d).first;
      places.push_back({&row->second.context_series[distribution], op.context, c.case_id});
    }
  }
  std::map<std::vector<GateCaseResult>*, std::vector<Place*>> members;
  for (Place& p : places) members[p.series].push_back(&p);
  for (auto& [series, in_series] : members) {
    // A case has one result per distribution: no two places of a series are equal.
    std::sort(in_series.begin(), in_series.end(), [](const Place* a, const Place* b) {
      return std::tuple(a->context, a->case_id) < std::tuple(b->context, b->case_id);
    });
    for (std::size_t i = 0; i < in_series.size(); ++i) in_series[i]->at = i;
    series->resize(in_series.size());
  }
  std::size_t next = 0;
  for (const CaseSummary& c : cases)
    for (GateCaseResult& r : gate_results(c)) {
      const Place& p = places[next++];
      (*p.series)[p.at] = std::move(r);
    }
  table.distributions.assign(distributions.begin(), distributions.end());

  for (auto& [key, row] : rows) {
    row.label = row_label(key, shapes.size() > 1);
    for (auto& [distribution, series] : row.context_series) {
      GateCell& cell = row.cells[distribution];
      cell.shown = series.back();  // the largest context; the last stored of equal contexts
      for (const GateCaseResult& r : series) cell.case_ids.push_back(r.case_id);
    }
    table.rows.push_back(std::move(row));
  }
  std::sort(table.rows.begin(), table.rows.end(), [](const GateRow& a, const GateRow& b) { return a.label < b.label; });
  add_step_series(table, read_gate_json);
  return table;
}

void add_step_series(GateTable& table, const GateJsonReader& read_gate_json) {
  if (!read_gate_json) return;
  // By row key, then distribution, context and case id: the problems in that order.
  std::vector<GateRow*> rows;
  for (GateRow& row : table.rows) rows.push_back(&row);
  std::sort(rows.begin(), rows.end(), [](const GateRow* a, const GateRow* b) { return a->key < b->key; });
  for (GateRow* row : rows)
    for (const auto& [distribution, series] : row->context_series)
      for (const GateCaseResult& r : series) {
        if (r.steps <= 0 || !r.has_gate_json) continue;
        const std::optional<std::string> text = read_gate_json(r.case_id);
        if (!text) {
          table.problems.push_back("case " + std::to_string(r.case_id) + ": its gate.json could not be read");
          continue;
        }
        try {
          row->step_series.push_back({r, parse_gate_steps(*text)});
        } catch (const std::exception& e) {
          table.problems.push_back("case " + std::to_string(r.case_id) + ": " + e.what());
        }
      }
}

}  // namespace tilepath::analysis
