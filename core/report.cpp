// Flat one-row-per-case tables over a run store.

#include "core/report.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>

#include "core/analysis/gate_table.h"

namespace tilepath {
namespace {

// Every cell appends its text to `out`: a 100k-case report writes ~5M cells, too many for a
// string of its own per cell and another per escaped cell.
void append_number(std::string& out, double v) {
  if (!std::isfinite(v)) return;
  // As printf's %.6g (to_chars is specified so), without its locale and buffer machinery.
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6).ptr;
  out.append(buf, end);
}

void append_number(std::string& out, std::optional<double> v) {
  if (v) append_number(out, *v);
}

void append_int(std::string& out, long long v) {
  char buf[24];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  out.append(buf, end);
}

void append_positive_int(std::string& out, int v) {
  if (v >= 0) append_int(out, v);
}

void append_dims(std::string& out, const int (&d)[3]) {
  if (d[0] <= 0) return;
  append_int(out, d[0]);
  out += 'x';
  append_int(out, d[1]);
  out += 'x';
  append_int(out, d[2]);
}

const QualityRow* quality(const CaseRecord& r, std::string_view metric) {
  for (const QualityRow& q : r.quality)
    if (q.metric == metric) return &q;
  return nullptr;
}

const PredictionRow* prediction(const CaseRecord& r) {
  return r.predictions.empty() ? nullptr : &r.predictions.front();
}

void append_contexts(std::string& out, const OperatingPoint& op) {
  if (op.context_lengths.empty()) return append_int(out, op.context);
  for (std::size_t i = 0; i < op.context_lengths.size(); ++i) {
    if (i) out += ';';
    append_int(out, op.context_lengths[i]);
  }
}

// A column's cell: appends the case's text (nothing where a backend has no value).
using Cell = void (*)(const CaseSummary&, std::string& out);

struct Column {
  std::string name;
  Cell cell;
};

// The value of the case's quality row of one metric.
template <const char* metric>
void quality_value(const CaseSummary& c, std::string& out) {
  if (const QualityRow* q = quality(c.record, metric)) append_number(out, q->value);
}

// The case's measurement of one name.
template <const char* name>
void measurement_value(const CaseSummary& c, std::string& out) {
  append_number(out, c.record.measurement(name));
}

constexpr char kLatencyUs[] = "latency_us", kLatencyMinUs[] = "latency_min_us", kLatencyMaxUs[] = "latency_max_us",
               kTileIntervalUs[] = "tile_interval_us", kTileIntervalLoadOnlyUs[] = "tile_interval_load_only_us",
               kTileIntervalComputeOnlyUs[] = "tile_interval_compute_only_us", kBytesMoved[] = "bytes_moved",
               kReadBandwidthGbps[] = "read_bandwidth_gbps", kFloorFraction[] = "floor_fraction",
               kKernelCheckRelL2[] = "kernel_check_rel_l2", kKernelCheckMaxAbs[] = "kernel_check_max_abs",
               kRelL2[] = "rel_l2", kKl[] = "kl";

const std::vector<Column>& columns() {
  static const std::vector<Column> table = {
      {"run_uuid", [](const CaseSummary& c, std::string& out) { out += c.run_uuid; }},
      {"case_id", [](const CaseSummary& c, std::string& out) { append_int(out, c.case_id); }},
      {"backend", [](const CaseSummary& c, std::string& out) { out += c.backend; }},
      {"device", [](const CaseSummary& c, std::string& out) { out += c.device; }},
      {"device_uid", [](const CaseSummary& c, std::string& out) { out += c.device_uid; }},
      {"kv", [](const CaseSummary& c, std::string& out) { out += to_string(c.record.op.kv); }},
      {"k_path", [](const CaseSummary& c, std::string& out) { out += to_string(c.record.op.k_path); }},
      {"mode", [](const CaseSummary& c, std::string& out) { out += to_string(c.record.op.mode); }},
      {"mma", [](const CaseSummary& c, std::string& out) { out += to_string(c.record.op.mma); }},
      {"k_repr", [](const CaseSummary& c, std::string& out) { out += to_string(c.record.op.k_repr); }},
      {"rope", [](const CaseSummary& c, std::string& out) { out += to_string(c.record.op.rope); }},
      {"scale", [](const CaseSummary& c, std::string& out) { out += to_string(c.record.op.scale); }},
      {"cache", [](const CaseSummary& c, std::string& out) { out += to_string(c.record.op.cache); }},
      {"batch", [](const CaseSummary& c, std::string& out) { append_int(out, c.record.op.batch); }},
      {"context", [](const CaseSummary& c, std::string& out) { append_contexts(out, c.record.op); }},
      {"q_heads", [](const CaseSummary& c, std::string& out) { append_int(out, c.record.op.q_heads); }},
      {"kv_heads", [](const CaseSummary& c, std::string& out) { append_int(out, c.record.op.kv_heads); }},
      {"head_dim", [](const CaseSummary& c, std::string& out) { append_int(out, c.record.op.head_dim); }},
      {"page_size", [](const CaseSummary& c, std::string& out) { append_int(out, c.record.op.page_size); }},
      {"splits",
       [](const CaseSummary& c, std::string& out) {
         // the count actually used when the backend reported it, else the request (0 = auto)
         append_int(out, c.record.kernel.splits > 0 ? c.record.kernel.splits : c.record.op.splits);
       }},
      {"status", [](const CaseSummary& c, std::string& out) { out += to_string(c.record.status); }},
      {"latency_us", measurement_value<kLatencyUs>},
      {"latency_min_us", measurement_value<kLatencyMinUs>},
      {"latency_max_us", measurement_value<kLatencyMaxUs>},
      {"tile_interval_us", measurement_value<kTileIntervalUs>},
      // The ring alone (the load_only kernel's interval): for a case without stage costs (the
      // wgmma kernels) the measured part of what limits the interval.
      {"tile_interval_load_only_us", measurement_value<kTileIntervalLoadOnlyUs>},
      // The compute side alone (the wgmma kernels' compute_only interval), beside the ring.
      {"tile_interval_compute_only_us", measurement_value<kTileIntervalComputeOnlyUs>},
      {"bytes_moved", measurement_value<kBytesMoved>},
      {"read_bandwidth_gbps", measurement_value<kReadBandwidthGbps>},
      {"floor_fraction", measurement_value<kFloorFraction>},
      {"predicted_ii_us",
       [](const CaseSummary& c, std::string& out) {
         if (const PredictionRow* p = prediction(c.record)) append_number(out, p->ii_us);
       }},
      {"limiting_stage",
       [](const CaseSummary& c, std::string& out) {
         if (const PredictionRow* p = prediction(c.record)) out += p->limiting_stage;
       }},
      {"limiting_agent",
       [](const CaseSummary& c, std::string& out) {
         if (const PredictionRow* p = prediction(c.record)) out += p->limiting_agent;
       }},
      {"unknown_stages",
       [](const CaseSummary& c, std::string& out) {
         // Stages counted as 0 because nothing measured them; "not recorded" for a
         // prediction derived before they were tracked (`tilepath db reanalyze`).
         const PredictionRow* p = prediction(c.record);
         if (p == nullptr) return;
         if (!p->unknown_stages) {
           out += "not recorded";
         } else if (p->unknown_stages->empty()) {
           out += "none";
         } else {
           const std::size_t start = out.size();
           for (const std::string& stage : *p->unknown_stages) (out += out.size() == start ? "" : ";") += stage;
         }
       }},
      {"overlap_efficiency",
       [](const CaseSummary& c, std::string& out) {
         if (const PredictionRow* p = prediction(c.record)) append_number(out, p->overlap_efficiency);
       }},
      {"kernel", [](const CaseSummary& c, std::string& out) { out += c.record.kernel.kernel_name; }},
      {"cubin_sha256", [](const CaseSummary& c, std::string& out) { out += c.record.kernel.cubin_sha256; }},
      {"regs", [](const CaseSummary& c, std::string& out) { append_positive_int(out, c.record.kernel.regs_per_thread); }},
      {"smem_static_bytes",
       [](const CaseSummary& c, std::string& out) { append_positive_int(out, c.record.kernel.smem_static_bytes); }},
      {"smem_dynamic_bytes",
       [](const CaseSummary& c, std::string& out) { append_positive_int(out, c.record.kernel.smem_dynamic_bytes); }},
      {"occupancy_theoretical",
       [](const CaseSummary& c, std::string& out) { append_number(out, c.record.kernel.occupancy_theoretical); }},
      {"occupancy_achieved",
       [](const CaseSummary& c, std::string& out) { append_number(out, c.record.kernel.occupancy_achieved); }},
      {"grid", [](const CaseSummary& c, std::string& out) { append_dims(out, c.record.kernel.grid); }},
      {"block", [](const CaseSummary& c, std::string& out) { append_dims(out, c.record.kernel.block); }},
      // The kernel check: the kernel against an emulation of its own arithmetic.
      {"kernel_check_rel_l2", quality_value<kKernelCheckRelL2>},
      {"kernel_check_max_abs", quality_value<kKernelCheckMaxAbs>},
      {"kernel_check_tolerance",
       [](const CaseSummary& c, std::string& out) {
         if (const QualityRow* q = quality(c.record, kKernelCheckRelL2)) append_number(out, q->threshold);
       }},
      // The gate on the case's own inputs: against attention at full precision.
      {"gate_distribution",
       [](const CaseSummary& c, std::string& out) {
         if (const QualityRow* q = quality(c.record, kRelL2)) out += q->distribution;
       }},
      {"gate_rel_l2", quality_value<kRelL2>},
      {"gate_kl", quality_value<kKl>},
      {"gate_passed",
       [](const CaseSummary& c, std::string& out) {
         if (const std::optional<bool> passed = analysis::gate_passed(c.record)) out += *passed ? "yes" : "no";
       }},
      {"gate_rows",
       [](const CaseSummary& c, std::string& out) {
         // "16/16": the (request, kv head) rows the gate compared, of all the case's rows.
         const auto checked = c.record.measurement("gate_rows_checked");
         const auto total = c.record.measurement("gate_rows_total");
         if (!checked || !total) return;
         append_positive_int(out, static_cast<int>(*checked));
         out += '/';
         append_positive_int(out, static_cast<int>(*total));
       }},
      {"message", [](const CaseSummary& c, std::string& out) { out += c.record.message; }},
      {"artifacts",
       [](const CaseSummary& c, std::string& out) {
         // "kernel.json (758 B); ncu-k8v8-transform-k_only.txt (10803 B)"
         for (std::size_t i = 0; i < c.artifacts.size(); ++i) {
           ((out += i ? "; " : "") += c.artifacts[i].name) += " (";
           append_int(out, c.artifacts[i].size);
           out += " B)";
         }
       }},
  };
  return table;
}

// The first of s's characters from `at` that a format escapes, or npos. A loop, not
// find_first_of, which calls memchr on the set for every character of the cell.
template <char... special>
std::size_t find_special(std::string_view s, std::size_t at = 0) {
  for (; at < s.size(); ++at)
    if (((s[at] == special) || ...)) return at;
  return std::string_view::npos;
}

std::string& append_csv_field(std::string& out, std::string_view s) {
  if (find_special<',', '"', '\n', '\r'>(s) == std::string_view::npos) return out += s;
  out += '"';
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out += '"';
}

std::string& append_markdown_cell(std::string& out, std::string_view s) {
  for (std::size_t at = 0;;) {
    const std::size_t special = find_special<'|', '\n', '\r'>(s, at);
    out += s.substr(at, special - at);
    if (special == std::string_view::npos) return out;
    out += s[special] == '|' ? "\\|" : " ";
    at = special + 1;
  }
}

// One line of a table: cell(i) for each column i of `shown`, as CSV or a Markdown row.
template <class Cell>
void append_table_line(std::string& text, ReportFormat format, const std::vector<std::size_t>& shown, Cell&& cell) {
  if (format == ReportFormat::csv) {
    for (std::size_t n = 0; n < shown.size(); ++n) append_csv_field(text += n ? "," : "", cell(shown[n]));
  } else {
    text += "|";
    for (std::size_t i : shown) append_markdown_cell(text += " ", cell(i)) += " |";
  }
  text += "\n";
}

// The header line of the `shown` columns, and in Markdown the rule under it.
void append_table_header(std::string& text, ReportFormat format, const std::vector<std::string>& header,
                         const std::vector<std::size_t>& shown) {
  append_table_line(text, format, shown, [&](std::size_t i) { return std::string_view(header[i]); });
  if (format == ReportFormat::markdown) {
    text += "|";
    for (std::size_t n = 0; n < shown.size(); ++n) text += "---|";
    text += "\n";
  }
}

}  // namespace

const std::vector<std::string>& report_columns() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Column& c : columns()) out.push_back(c.name);
    return out;
  }();
  return names;
}

namespace {

// Cases per batch: a few MB of summaries, and few enough queries that batching costs nothing.
constexpr std::size_t kCasesPerBatch = 4096;

// The cases the report lists, a batch at a time, with what the columns read and nothing
// else: a case holds ~60 measurements and a prediction's detail, and a report of 100k cases
// must not read them all.
void for_each_report_case(const RunStore& store, const CaseFilter& filter,
                          const std::function<void(const CaseSummary&)>& visit) {
  CaseDetail detail;
  detail.measurements = {kLatencyUs,          kLatencyMinUs,           kLatencyMaxUs,
                         kTileIntervalUs,     kTileIntervalLoadOnlyUs, kTileIntervalComputeOnlyUs,
                         kBytesMoved,         kReadBandwidthGbps,      kFloorFraction,
                         "gate_rows_checked", "gate_rows_total"};
  detail.stage_costs = false;
  detail.prediction_detail_json = false;
  store.for_each_case_batch(filter, detail, kCasesPerBatch, [&](std::vector<CaseSummary>& batch) {
    for (const CaseSummary& summary : batch) visit(summary);
  });
}

// The table as text, handed to `emit` in pieces of about 1 MB as the cases are read.
void write_table(const RunStore& store, ReportFormat format, const CaseFilter& filter,
                 const std::function<void(const std::string&)>& emit) {
  const auto& header = report_columns();
  std::vector<std::size_t> shown;
  if (format == ReportFormat::csv) {
    for (std::size_t i = 0; i < header.size(); ++i) shown.push_back(i);
  } else {
    // The run UUID and free-text message make the table unreadable; CSV keeps them.
    static const std::vector<std::string> skip = {"run_uuid", "message", "cubin_sha256", "grid", "block"};
    for (std::size_t i = 0; i < header.size(); ++i)
      if (std::find(skip.begin(), skip.end(), header[i]) == skip.end()) shown.push_back(i);
  }
  std::string text;
  append_table_header(text, format, header, shown);
  constexpr std::size_t kFlushBytes = 1 << 20;
  std::string cell_text;
  for_each_report_case(store, filter, [&](const CaseSummary& summary) {
    append_table_line(text, format, shown, [&](std::size_t i) {
      cell_text.clear();
      columns()[i].cell(summary, cell_text);
      return std::string_view(cell_text);
    });
    if (text.size() >= kFlushBytes) {
      emit(text);
      text.clear();
    }
  });
  emit(text);
}

}  // namespace

void for_each_report_row(const RunStore& store, const CaseFilter& filter,
                         const std::function<void(const std::vector<std::string>&)>& row) {
  std::vector<std::string> cells(columns().size());
  for_each_report_case(store, filter, [&](const CaseSummary& summary) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      cells[i].clear();
      columns()[i].cell(summary, cells[i]);
    }
    row(cells);
  });
}

std::vector<std::vector<std::string>> report_rows(const RunStore& store, const CaseFilter& filter) {
  std::vector<std::vector<std::string>> rows;
  for_each_report_row(store, filter, [&](const std::vector<std::string>& cells) { rows.push_back(cells); });
  return rows;
}

void write_report(std::FILE* out, const RunStore& store, ReportFormat format, const CaseFilter& filter) {
  write_table(store, format, filter, [&](const std::string& text) { std::fwrite(text.data(), 1, text.size(), out); });
}

std::string report_csv(const RunStore& store, const CaseFilter& filter) {
  std::string out;
  write_table(store, ReportFormat::csv, filter, [&](const std::string& text) { out += text; });
  return out;
}

std::string report_markdown(const RunStore& store, const CaseFilter& filter) {
  std::string out;
  write_table(store, ReportFormat::markdown, filter, [&](const std::string& text) { out += text; });
  return out;
}

const std::vector<std::string>& run_report_columns() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out = {"run_id",     "run_uuid", "started_at",   "finished_at",  "backend", "device",
                                    "device_uid", "host",     "tool_version", "git_revision", "cases"};
    for (std::size_t s = 0; s < kCaseStatusCount; ++s) out.emplace_back(to_string(static_cast<CaseStatus>(s)));
    out.insert(out.end(), {"command", "notes"});
    return out;
  }();
  return names;
}

std::vector<std::vector<std::string>> run_report_rows(const RunStore& store, const CaseFilter& filter) {
  std::vector<std::vector<std::string>> rows;
  for (const RunCaseCounts& s : store.run_case_counts(filter)) {
    const RunInfo& r = s.run;
    std::vector<std::string> row = {std::to_string(r.id),
                                    r.uuid,
                                    r.started_at,
                                    r.finished_at,
                                    r.backend,
                                    r.device,
                                    r.device_uid,
                                    r.host,
                                    r.tool_version,
                                    r.git_revision,
                                    std::to_string(s.cases())};
    for (int n : s.cases_by_status) row.push_back(std::to_string(n));
    row.insert(row.end(), {r.command, r.notes});
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string run_report(const RunStore& store, ReportFormat format, const CaseFilter& filter) {
  const auto& header = run_report_columns();
  std::vector<std::size_t> every(header.size());
  std::iota(every.begin(), every.end(), std::size_t{0});
  std::string text;
  append_table_header(text, format, header, every);
  for (const auto& row : run_report_rows(store, filter))
    append_table_line(text, format, every, [&](std::size_t i) { return std::string_view(row[i]); });
  return text;
}

}  // namespace tilepath
