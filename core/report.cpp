// Flat one-row-per-case tables over a run store.

#include "core/report.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <sstream>
#include <string>

#include "core/analysis/gate_table.h"

namespace tilepath {
namespace {

std::string number(double v) {
  if (!std::isfinite(v)) return "";
  // As printf's %.6g (to_chars is specified so), without its locale and buffer machinery:
  // a 100k-case report formats a million numbers.
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6).ptr;
  return std::string(buf, end);
}

std::string number(std::optional<double> v) { return v ? number(*v) : ""; }

std::string positive_int(int v) { return v >= 0 ? std::to_string(v) : ""; }

std::string dims(const int (&d)[3]) {
  if (d[0] <= 0) return "";
  return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]);
}

const QualityRow* quality(const CaseRecord& r, const char* metric) {
  for (const QualityRow& q : r.quality)
    if (q.metric == metric) return &q;
  return nullptr;
}

const PredictionRow* prediction(const CaseRecord& r) {
  return r.predictions.empty() ? nullptr : &r.predictions.front();
}

std::string contexts(const OperatingPoint& op) {
  if (op.context_lengths.empty()) return std::to_string(op.context);
  std::string s;
  for (std::size_t i = 0; i < op.context_lengths.size(); ++i)
    s += (i ? ";" : "") + std::to_string(op.context_lengths[i]);
  return s;
}

using Cell = std::function<std::string(const CaseSummary&)>;

struct Column {
  std::string name;
  Cell cell;
};

const std::vector<Column>& columns() {
  static const std::vector<Column> table = {
      {"run_uuid", [](const CaseSummary& c) { return c.run_uuid; }},
      {"case_id", [](const CaseSummary& c) { return std::to_string(c.case_id); }},
      {"backend", [](const CaseSummary& c) { return c.backend; }},
      {"device", [](const CaseSummary& c) { return c.device; }},
      {"kv", [](const CaseSummary& c) { return std::string(to_string(c.record.op.kv)); }},
      {"k_path", [](const CaseSummary& c) { return std::string(to_string(c.record.op.k_path)); }},
      {"mode", [](const CaseSummary& c) { return std::string(to_string(c.record.op.mode)); }},
      {"mma", [](const CaseSummary& c) { return std::string(to_string(c.record.op.mma)); }},
      {"k_repr", [](const CaseSummary& c) { return std::string(to_string(c.record.op.k_repr)); }},
      {"rope", [](const CaseSummary& c) { return std::string(to_string(c.record.op.rope)); }},
      {"scale", [](const CaseSummary& c) { return std::string(to_string(c.record.op.scale)); }},
      {"cache", [](const CaseSummary& c) { return std::string(to_string(c.record.op.cache)); }},
      {"batch", [](const CaseSummary& c) { return std::to_string(c.record.op.batch); }},
      {"context", [](const CaseSummary& c) { return contexts(c.record.op); }},
      {"q_heads", [](const CaseSummary& c) { return std::to_string(c.record.op.q_heads); }},
      {"kv_heads", [](const CaseSummary& c) { return std::to_string(c.record.op.kv_heads); }},
      {"head_dim", [](const CaseSummary& c) { return std::to_string(c.record.op.head_dim); }},
      {"page_size", [](const CaseSummary& c) { return std::to_string(c.record.op.page_size); }},
      {"splits",
       [](const CaseSummary& c) {
         // the count actually used when the backend reported it, else the request (0 = auto)
         return std::to_string(c.record.kernel.splits > 0 ? c.record.kernel.splits : c.record.op.splits);
       }},
      {"status", [](const CaseSummary& c) { return std::string(to_string(c.record.status)); }},
      {"latency_us", [](const CaseSummary& c) { return number(c.record.measurement("latency_us")); }},
      {"latency_min_us", [](const CaseSummary& c) { return number(c.record.measurement("latency_min_us")); }},
      {"latency_max_us", [](const CaseSummary& c) { return number(c.record.measurement("latency_max_us")); }},
      {"tile_interval_us", [](const CaseSummary& c) { return number(c.record.measurement("tile_interval_us")); }},
      {"bytes_moved", [](const CaseSummary& c) { return number(c.record.measurement("bytes_moved")); }},
      {"read_bandwidth_gbps", [](const CaseSummary& c) { return number(c.record.measurement("read_bandwidth_gbps")); }},
      {"floor_fraction", [](const CaseSummary& c) { return number(c.record.measurement("floor_fraction")); }},
      {"predicted_ii_us",
       [](const CaseSummary& c) {
         const PredictionRow* p = prediction(c.record);
         return p ? number(p->ii_us) : std::string();
       }},
      {"limiting_stage",
       [](const CaseSummary& c) {
         const PredictionRow* p = prediction(c.record);
         return p ? p->limiting_stage : std::string();
       }},
      {"limiting_agent",
       [](const CaseSummary& c) {
         const PredictionRow* p = prediction(c.record);
         return p ? p->limiting_agent : std::string();
       }},
      {"unknown_stages",
       [](const CaseSummary& c) {
         // Stages counted as 0 because nothing measured them; "not recorded" for a
         // prediction derived before they were tracked (`tilepath db reanalyze`).
         const PredictionRow* p = prediction(c.record);
         if (p == nullptr) return std::string();
         if (!p->unknown_stages) return std::string("not recorded");
         if (p->unknown_stages->empty()) return std::string("none");
         std::string s;
         for (const std::string& stage : *p->unknown_stages) s += (s.empty() ? "" : ";") + stage;
         return s;
       }},
      {"overlap_efficiency",
       [](const CaseSummary& c) {
         const PredictionRow* p = prediction(c.record);
         return p ? number(p->overlap_efficiency) : std::string();
       }},
      {"kernel", [](const CaseSummary& c) { return c.record.kernel.kernel_name; }},
      {"cubin_sha256", [](const CaseSummary& c) { return c.record.kernel.cubin_sha256; }},
      {"regs", [](const CaseSummary& c) { return positive_int(c.record.kernel.regs_per_thread); }},
      {"smem_static_bytes", [](const CaseSummary& c) { return positive_int(c.record.kernel.smem_static_bytes); }},
      {"smem_dynamic_bytes", [](const CaseSummary& c) { return positive_int(c.record.kernel.smem_dynamic_bytes); }},
      {"occupancy_theoretical", [](const CaseSummary& c) { return number(c.record.kernel.occupancy_theoretical); }},
      {"occupancy_achieved", [](const CaseSummary& c) { return number(c.record.kernel.occupancy_achieved); }},
      {"grid", [](const CaseSummary& c) { return dims(c.record.kernel.grid); }},
      {"block", [](const CaseSummary& c) { return dims(c.record.kernel.block); }},
      // The kernel check: the kernel against an emulation of its own arithmetic.
      {"kernel_check_rel_l2",
       [](const CaseSummary& c) {
         const QualityRow* q = quality(c.record, "kernel_check_rel_l2");
         return q ? number(q->value) : std::string();
       }},
      {"kernel_check_max_abs",
       [](const CaseSummary& c) {
         const QualityRow* q = quality(c.record, "kernel_check_max_abs");
         return q ? number(q->value) : std::string();
       }},
      {"kernel_check_tolerance",
       [](const CaseSummary& c) {
         const QualityRow* q = quality(c.record, "kernel_check_rel_l2");
         return q ? number(q->threshold) : std::string();
       }},
      // The gate on the case's own inputs: against attention at full precision.
      {"gate_distribution",
       [](const CaseSummary& c) {
         const QualityRow* q = quality(c.record, "rel_l2");
         return q ? q->distribution : std::string();
       }},
      {"gate_rel_l2",
       [](const CaseSummary& c) {
         const QualityRow* q = quality(c.record, "rel_l2");
         return q ? number(q->value) : std::string();
       }},
      {"gate_kl",
       [](const CaseSummary& c) {
         const QualityRow* q = quality(c.record, "kl");
         return q ? number(q->value) : std::string();
       }},
      {"gate_passed",
       [](const CaseSummary& c) {
         const std::optional<bool> passed = analysis::gate_passed(c.record);
         return passed ? std::string(*passed ? "yes" : "no") : std::string();
       }},
      {"gate_rows",
       [](const CaseSummary& c) {
         // "16/16": the (request, kv head) rows the gate compared, of all the case's rows.
         const auto checked = c.record.measurement("gate_rows_checked");
         const auto total = c.record.measurement("gate_rows_total");
         if (!checked || !total) return std::string();
         return positive_int(static_cast<int>(*checked)) + "/" + positive_int(static_cast<int>(*total));
       }},
      {"message", [](const CaseSummary& c) { return c.record.message; }},
      {"artifacts",
       [](const CaseSummary& c) {
         // "kernel.json (758 B); ncu-k8v8-transform-k_only.txt (10803 B)"
         std::string s;
         for (const ArtifactInfo& a : c.artifacts)
           s += (s.empty() ? "" : "; ") + a.name + " (" + std::to_string(a.size) + " B)";
         return s;
       }},
  };
  return table;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string markdown_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
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
  detail.measurements = {"latency_us",       "latency_min_us",    "latency_max_us",
                         "tile_interval_us", "bytes_moved",       "read_bandwidth_gbps",
                         "floor_fraction",   "gate_rows_checked", "gate_rows_total"};
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
  // One line of the table, cell(i) the text of column i.
  auto append_line = [&](auto&& cell) {
    if (format == ReportFormat::csv) {
      for (std::size_t n = 0; n < shown.size(); ++n) (text += n ? "," : "") += csv_field(cell(shown[n]));
    } else {
      text += "|";
      for (std::size_t i : shown) ((text += " ") += markdown_cell(cell(i))) += " |";
    }
    text += "\n";
  };
  append_line([&](std::size_t i) { return header[i]; });
  if (format == ReportFormat::markdown) {
    text += "|";
    for (std::size_t n = 0; n < shown.size(); ++n) text += "---|";
    text += "\n";
  }
  constexpr std::size_t kFlushBytes = 1 << 20;
  for_each_report_case(store, filter, [&](const CaseSummary& summary) {
    append_line([&](std::size_t i) { return columns()[i].cell(summary); });
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
  std::vector<std::string> cells;
  cells.reserve(columns().size());
  for_each_report_case(store, filter, [&](const CaseSummary& summary) {
    cells.clear();
    for (const Column& c : columns()) cells.push_back(c.cell(summary));
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

}  // namespace tilepath
