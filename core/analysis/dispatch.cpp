#include "core/analysis/dispatch.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/analysis/gate_table.h"
#include "core/op_fields.h"

namespace tilepath::analysis {
namespace {

using nlohmann::json;

json number_or_null(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

// Log-log interpolation through (x, y) points at x: between the two points that bracket
// x, else along the two nearest on one side (extrapolation), else the one point's y.
double interpolate_log(std::vector<std::pair<double, double>> points, double x) {
  std::erase_if(points, [](const auto& p) { return !(p.first > 0 && p.second > 0); });
  if (points.empty() || !(x > 0)) return NAN;
  std::sort(points.begin(), points.end());
  for (const auto& [px, py] : points)
    if (px == x) return py;
  if (points.size() == 1) return points.front().second;
  std::size_t hi = 0;
  while (hi < points.size() && points[hi].first < x) ++hi;
  std::size_t a, b;
  if (hi == 0) {
    a = 0, b = 1;  // below the first point
  } else if (hi == points.size()) {
    a = points.size() - 2, b = points.size() - 1;  // above the last
  } else {
    a = hi - 1, b = hi;
  }
  const double t = (std::log(x) - std::log(points[a].first)) / (std::log(points[b].first) - std::log(points[a].first));
  return std::exp(std::log(points[a].second) + t * (std::log(points[b].second) - std::log(points[a].second)));
}

double latency(const CaseSummary& c) { return c.record.measurement("latency_us").value_or(NAN); }

bool gate_row_of(const QualityRow& q, const std::string& distribution) {
  return is_gate_row(q) && q.distribution == distribution;
}

// The first failing gate row of the distribution, or nullptr.
const QualityRow* failed_gate(const CaseRecord& rec, const std::string& distribution) {
  for (const QualityRow& q : rec.quality)
    if (gate_row_of(q, distribution) && !q.passed) return &q;
  return nullptr;
}

// What a gate result applies to: the representation (every variant field but splits and
// mma: `tilepath gate` emulates mma_sync's arithmetic, and a representation that fails it
// is not admitted on either family) and the shape of the rows (head dim, GQA ratio). A
// `tilepath gate` case stores its rows on a case of its own, so a measured variant finds
// its result through this key.
std::string gate_key(const OperatingPoint& op) {
  return std::string(to_string(op.kv)) + "/" + std::string(to_string(op.k_path)) + "/" +
         std::string(to_string(op.mode)) + "/" + std::string(to_string(op.k_repr)) + "/" +
         std::string(to_string(op.rope)) + "/" + std::string(to_string(op.scale)) + "/d" + std::to_string(op.head_dim) +
         "/g" + std::to_string(op.gqa_ratio());
}

// Per gate key: the first failing row of the distribution among all cases; a key that
// passed everywhere maps to nullptr.
std::map<std::string, const QualityRow*> gate_index(const std::vector<CaseSummary>& cases,
                                                    const std::string& distribution) {
  std::map<std::string, const QualityRow*> index;
  for (const CaseSummary& c : cases) {
    bool any = false;
    for (const QualityRow& q : c.record.quality) any = any || gate_row_of(q, distribution);
    if (!any) continue;
    const QualityRow*& slot = index[gate_key(c.record.op)];
    if (slot == nullptr) slot = failed_gate(c.record, distribution);
  }
  return index;
}

std::string group_key(const CaseSummary& c) {
  OperatingPoint p = dispatch_point(c.record.op);
  p.batch = 1;
  p.context = 1;
  return c.backend + "|" + c.device + "|" + p.key();
}

// A row of the table: entries of one measured batch, split at its context crossovers.
void add_row_entries(DispatchGroup& g, std::size_t row) {
  const int batch = g.batches[row];
  // The batches this row stands for: up to the geometric midpoints to the next rows.
  const int batch_lo = row == 0 ? 1 : static_cast<int>(std::ceil(std::sqrt(double(g.batches[row - 1]) * batch)));
  const int batch_hi = row + 1 == g.batches.size()
                           ? 4096
                           : static_cast<int>(std::ceil(std::sqrt(double(batch) * g.batches[row + 1]))) - 1;
  std::vector<std::pair<int, const DispatchCandidate*>> winners;  // (context, winner) in order
  for (int context : g.contexts)
    if (const DispatchCell* c = g.cell(batch, context); c != nullptr && c->winner() != nullptr)
      winners.emplace_back(context, c->winner());
  if (winners.empty()) return;
  DispatchEntry current{batch_lo, batch_hi, 1.0, 0.0, winners.front().second->variant, {}};
  for (std::size_t i = 0; i < winners.size(); ++i) {
    const auto& [context, winner] = winners[i];
    if (winner->variant != current.variant) {
      // Split at the crossover between the previous point and this one.
      double at = context;
      for (const Crossover& x : g.crossovers)
        if (x.axis == "context" && x.held == batch && x.hi == context) at = x.at;
      current.context_hi = at;
      g.entries.push_back(current);
      current = DispatchEntry{batch_lo, batch_hi, at, 0.0, winner->variant, {}};
    }
    current.cases.push_back(winner->case_id);
  }
  current.context_hi = double(find_op_field("context")->max) + 1;
  g.entries.push_back(current);
}

// Crossovers between neighbouring measured points whose winners differ.
void add_crossovers(DispatchGroup& g, const std::string& axis) {
  const bool along_context = axis == "context";
  const std::vector<int>& held_values = along_context ? g.batches : g.contexts;
  const std::vector<int>& axis_values = along_context ? g.contexts : g.batches;
  for (int held : held_values) {
    const DispatchCell* previous = nullptr;
    for (int v : axis_values) {
      const DispatchCell* cell = along_context ? g.cell(held, v) : g.cell(v, held);
      if (cell == nullptr || cell->winner() == nullptr) continue;
      if (previous != nullptr && previous->winner()->variant != cell->winner()->variant) {
        const std::string& from = previous->winner()->variant;
        const std::string& to = cell->winner()->variant;
        auto find = [](const DispatchCell* c, const std::string& variant) -> const DispatchCandidate* {
          for (const DispatchCandidate& d : c->admitted)
            if (d.variant == variant) return &d;
          return nullptr;
        };
        const DispatchCandidate* to_lo = find(previous, to);
        const DispatchCandidate* from_hi = find(cell, from);
        Crossover x;
        x.axis = axis;
        x.held = held;
        x.lo = along_context ? previous->context : previous->batch;
        x.hi = v;
        x.from = from;
        x.to = to;
        x.cases = {previous->winner()->case_id, to_lo ? to_lo->case_id : 0, from_hi ? from_hi->case_id : 0,
                   cell->winner()->case_id};
        if (to_lo != nullptr && from_hi != nullptr) {
          // log(t_from / t_to) is linear in log(axis) between lo and hi: its root.
          const double d_lo = std::log(previous->winner()->latency_us / to_lo->latency_us);  // < 0
          const double d_hi = std::log(from_hi->latency_us / cell->winner()->latency_us);    // > 0
          x.margin_lo = to_lo->latency_us / previous->winner()->latency_us - 1;
          x.margin_hi = from_hi->latency_us / cell->winner()->latency_us - 1;
          const double t = d_lo / (d_lo - d_hi);
          // Kept within [lo, hi]: at a tie (t = 0) exp(log(lo)) may round just below lo.
          x.at = std::clamp(std::exp(std::log(double(x.lo)) + t * (std::log(double(x.hi)) - std::log(double(x.lo)))),
                            double(x.lo), double(x.hi));
        } else {
          x.at = std::sqrt(double(x.lo) * x.hi);  // one side unmeasured: the geometric middle
        }
        g.crossovers.push_back(std::move(x));
      }
      previous = cell;
    }
  }
}

json crossover_json(const Crossover& x) {
  return {{"axis", x.axis},
          {"held", {{x.axis == "context" ? "batch" : "context", x.held}}},
          {"at", number_or_null(x.at)},
          {"between", {x.lo, x.hi}},
          {"from", x.from},
          {"to", x.to},
          {"margin", {{"before", number_or_null(x.margin_lo)}, {"after", number_or_null(x.margin_hi)}}},
          {"cases", x.cases}};
}

}  // namespace

std::string dispatch_variant_label(const OperatingPoint& op) {
  const OperatingPoint defaults;
  std::string label = op.variant_label();
  if (op.rope != defaults.rope) label += "/" + std::string(to_string(op.rope));
  if (op.scale != defaults.scale) label += "/" + std::string(to_string(op.scale));
  if (op.splits != defaults.splits) label += "/splits=" + std::to_string(op.splits);
  return label;
}

OperatingPoint dispatch_point(const OperatingPoint& op) {
  OperatingPoint point = op;
  const OperatingPoint defaults;
  for (const OpField& f : op_fields())
    if (f.variant) f.parse_text(point, f.get_text(defaults), std::string(f.name));
  return point;
}

double DispatchCell::margin() const {
  return admitted.size() < 2 ? NAN : admitted[1].latency_us / admitted[0].latency_us - 1;
}

const DispatchCell* DispatchGroup::cell(int batch, int context) const {
  auto it = cells.find({batch, context});
  return it == cells.end() ? nullptr : &it->second;
}

double DispatchGroup::interpolated_latency(const std::string& variant, int batch, int context,
                                           std::optional<std::pair<int, int>> skip) const {
  auto measured = [&](int b, int s) -> double {
    if (skip && skip->first == b && skip->second == s) return NAN;
    const DispatchCell* c = cell(b, s);
    if (c == nullptr) return NAN;
    for (const DispatchCandidate& d : c->admitted)
      if (d.variant == variant) return d.latency_us;
    return NAN;
  };
  // Rows first (along context at each measured batch, then along batch), and columns
  // first; their geometric mean. At a measured point both give the measurement.
  std::vector<std::pair<double, double>> by_batch, by_context;
  for (int b : batches) {
    std::vector<std::pair<double, double>> row;
    for (int s : contexts) row.emplace_back(s, measured(b, s));
    by_batch.emplace_back(b, interpolate_log(row, context));
  }
  for (int s : contexts) {
    std::vector<std::pair<double, double>> column;
    for (int b : batches) column.emplace_back(b, measured(b, s));
    by_context.emplace_back(s, interpolate_log(column, batch));
  }
  const double rows_first = interpolate_log(by_batch, batch);
  const double columns_first = interpolate_log(by_context, context);
  if (std::isfinite(rows_first) && std::isfinite(columns_first)) return std::sqrt(rows_first * columns_first);
  return std::isfinite(rows_first) ? rows_first : columns_first;
}

std::string DispatchGroup::predicted_winner(int batch, int context, std::optional<std::pair<int, int>> skip) const {
  std::set<std::string> variants;
  if (const DispatchCell* here = cell(batch, context)) {
    for (const DispatchCandidate& d : here->admitted) variants.insert(d.variant);  // what exists here
  } else {
    for (const auto& [key, c] : cells)
      for (const DispatchCandidate& d : c.admitted) variants.insert(d.variant);
  }
  std::string best;
  double best_us = INFINITY;
  for (const std::string& v : variants) {
    const double us = interpolated_latency(v, batch, context, skip);
    if (std::isfinite(us) && us < best_us) best_us = us, best = v;
  }
  return best;
}

DispatchTable build_dispatch(const std::vector<CaseSummary>& cases, const DispatchOptions& options) {
  DispatchTable table;
  table.gate = options.gate_distribution.empty()
                   ? "no gate applied: every measured variant is admitted"
                   : "variants whose stored gate result on '" + options.gate_distribution +
                         "' failed are excluded (a result counts for the same representation, head dim and GQA "
                         "ratio; variants without one are admitted)";
  const std::map<std::string, const QualityRow*> gates = options.gate_distribution.empty()
                                                             ? std::map<std::string, const QualityRow*>{}
                                                             : gate_index(cases, options.gate_distribution);
  std::map<std::string, std::size_t> group_of;
  // (group, batch, context, variant) -> the newest ok case
  std::map<std::tuple<std::size_t, int, int, std::string>, const CaseSummary*> newest;
  for (const CaseSummary& c : cases) {
    const OperatingPoint& op = c.record.op;
    if (c.record.status != CaseStatus::ok || !op.context_lengths.empty() || !std::isfinite(latency(c))) continue;
    if (options.cache && op.cache != *options.cache) continue;
    if ((!options.backend.empty() && c.backend != options.backend) ||
        (!options.device.empty() && c.device != options.device))
      continue;
    const std::string key = group_key(c);
    auto [it, added] = group_of.emplace(key, table.groups.size());
    if (added) {
      DispatchGroup g;
      g.backend = c.backend;
      g.device = c.device;
      g.shape = dispatch_point(op);
      table.groups.push_back(std::move(g));
    }
    const CaseSummary*& slot = newest[{it->second, op.batch, op.context, dispatch_variant_label(op)}];
    if (slot == nullptr || c.case_id > slot->case_id) slot = &c;
  }
  for (const auto& [key, c] : newest) {
    const auto& [group, batch, context, variant] = key;
    DispatchCell& cell = table.groups[group].cells[{batch, context}];
    cell.batch = batch;
    cell.context = context;
    const QualityRow* q = nullptr;
    if (auto it = gates.find(gate_key(c->record.op)); it != gates.end()) q = it->second;
    if (q != nullptr) {
      cell.excluded.push_back({variant, c->case_id,
                               "fails the gate on " + q->distribution + ": " + q->metric + " " +
                                   std::to_string(q->value) + " against threshold " + std::to_string(q->threshold)});
      continue;
    }
    cell.admitted.push_back({variant, c->record.op, c->case_id, latency(*c)});
  }
  for (DispatchGroup& g : table.groups) {
    std::set<int> batches, contexts;
    for (auto& [key, cell] : g.cells) {
      batches.insert(key.first);
      contexts.insert(key.second);
      std::stable_sort(
          cell.admitted.begin(), cell.admitted.end(),
          [](const DispatchCandidate& a, const DispatchCandidate& b) { return a.latency_us < b.latency_us; });
    }
    g.batches.assign(batches.begin(), batches.end());
    g.contexts.assign(contexts.begin(), contexts.end());
    add_crossovers(g, "context");
    add_crossovers(g, "batch");
    for (std::size_t row = 0; row < g.batches.size(); ++row) add_row_entries(g, row);
  }
  table.regret = leave_one_out_regret(table.groups);
  return table;
}

RegretSummary leave_one_out_regret(const std::vector<DispatchGroup>& groups) {
  RegretSummary summary;
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    const DispatchGroup& g = groups[gi];
    for (const auto& [key, cell] : g.cells) {
      if (cell.admitted.size() < 2) continue;  // nothing to choose
      const std::string chosen = g.predicted_winner(cell.batch, cell.context, key);
      if (chosen.empty()) continue;  // no other point to place it from
      double chosen_us = NAN;
      for (const DispatchCandidate& d : cell.admitted)
        if (d.variant == chosen) chosen_us = d.latency_us;
      summary.points.push_back(
          {gi, cell.batch, cell.context, chosen, cell.winner()->variant, chosen_us / cell.winner()->latency_us - 1});
    }
  }
  if (summary.points.empty()) return summary;
  std::vector<double> r;
  for (const RegretPoint& p : summary.points) r.push_back(p.regret);
  std::sort(r.begin(), r.end());
  const std::size_t n = r.size();
  summary.median = n % 2 == 1 ? r[n / 2] : 0.5 * (r[n / 2 - 1] + r[n / 2]);
  summary.p90 = r[static_cast<std::size_t>(std::ceil(0.9 * double(n))) - 1];  // nearest rank
  summary.max = r.back();
  return summary;
}

json DispatchTable::to_json() const {
  json groups_json = json::array();
  json crossovers_json = json::array();
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    const DispatchGroup& g = groups[gi];
    json entries = json::array();
    for (const DispatchEntry& e : g.entries)
      entries.push_back({{"batch", {e.batch_lo, e.batch_hi}},
                         {"context", {e.context_lo, e.context_hi}},
                         {"variant", e.variant},
                         {"cases", e.cases}});
    json points = json::array();
    for (const auto& [key, cell] : g.cells) {
      json excluded = json::array();
      for (const DispatchExclusion& x : cell.excluded)
        excluded.push_back({{"variant", x.variant}, {"case", x.case_id}, {"reason", x.reason}});
      const DispatchCandidate* w = cell.winner();
      const DispatchCandidate* r = cell.runner_up();
      points.push_back({{"batch", cell.batch},
                        {"context", cell.context},
                        {"winner", w ? json(w->variant) : json(nullptr)},
                        {"winner_case", w ? json(w->case_id) : json(nullptr)},
                        {"latency_us", w ? number_or_null(w->latency_us) : json(nullptr)},
                        {"runner_up", r ? json(r->variant) : json(nullptr)},
                        {"runner_up_case", r ? json(r->case_id) : json(nullptr)},
                        {"margin", number_or_null(cell.margin())},
                        {"admitted", cell.admitted.size()},
                        {"excluded", excluded}});
    }
    json shape = tilepath::to_json(g.shape);
    shape.erase("batch");
    shape.erase("context");
    for (const OpField& f : op_fields())
      if (f.variant) shape.erase(std::string(f.name));
    groups_json.push_back({{"group", gi},
                           {"backend", g.backend},
                           {"device", g.device},
                           {"shape", shape},
                           {"batches", g.batches},
                           {"contexts", g.contexts},
                           {"entries", entries},
                           {"points", points}});
    for (const Crossover& x : g.crossovers) {
      json j = crossover_json(x);
      j["group"] = gi;
      crossovers_json.push_back(std::move(j));
    }
  }
  json regret_points = json::array();
  for (const RegretPoint& p : regret.points)
    regret_points.push_back({{"group", p.group},
                             {"batch", p.batch},
                             {"context", p.context},
                             {"chosen", p.chosen},
                             {"best", p.best},
                             {"regret", p.regret}});
  return {{"gate", gate},
          {"groups", groups_json},
          {"crossovers", crossovers_json},
          {"regret",
           {{"method", "leave-one-out: each measured point dispatched from the other points of its group"},
            {"points", regret.points.size()},
            {"median", number_or_null(regret.median)},
            {"p90", number_or_null(regret.p90)},
            {"max", number_or_null(regret.max)},
            {"per_point", regret_points}}}};
}

}  // namespace tilepath::analysis
