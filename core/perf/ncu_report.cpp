#include "core/perf/ncu_report.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <regex>
#include <utility>

namespace tilepath::perf {
namespace {

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(start, end - start));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(std::move(line));
    if (end == text.size()) break;
    start = end + 1;
  }
  return out;
}

// The dash runs of a table rule ("------- ----- -----"): [begin, end) per column.
// Empty when the line is not a rule of at least two columns.
std::vector<std::pair<std::size_t, std::size_t>> rule_columns(const std::string& line) {
  std::vector<std::pair<std::size_t, std::size_t>> cols;
  std::size_t i = 0;
  while (i < line.size()) {
    if (line[i] == ' ') {
      ++i;
      continue;
    }
    if (line[i] != '-') return {};
    std::size_t b = i;
    while (i < line.size() && line[i] == '-') ++i;
    cols.emplace_back(b, i);
  }
  if (cols.size() < 2) return {};
  return cols;
}

// "232,484" -> 232484; "no data", "n/a" -> NaN.
double cell_number(const std::string& text) {
  std::string digits;
  for (char c : text)
    if (c != ',') digits.push_back(c);
  if (digits.empty()) return NAN;
  char* end = nullptr;
  const double v = std::strtod(digits.c_str(), &end);
  if (end == digits.c_str() || *end != '\0') return NAN;
  return v;
}

std::string cut(const std::string& line, std::size_t from, std::size_t to) {
  if (from >= line.size()) return "";
  return trim(std::string_view(line).substr(from, to == std::string::npos ? std::string::npos : to - from));
}

}  // namespace

const NcuMetricRow* NcuReport::find(std::string_view name) const {
  for (const NcuMetricRow& r : rows)
    if (r.name == name) return &r;
  return nullptr;
}

std::vector<NcuStall> NcuReport::top_stalls(std::size_t n) const {
  static const std::string not_issued = "_not_issued";
  std::vector<NcuStall> out;
  for (const NcuStall& s : stalls) {
    const bool is_not_issued =
        s.reason.size() > not_issued.size() &&
        s.reason.compare(s.reason.size() - not_issued.size(), not_issued.size(), not_issued) == 0;
    if (s.reason != "selected" && !is_not_issued && std::isfinite(s.cycles_per_issue)) out.push_back(s);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const NcuStall& a, const NcuStall& b) { return a.cycles_per_issue > b.cycles_per_issue; });
  if (out.size() > n) out.resize(n);
  return out;
}

namespace {

const NcuMetricRow& required(const NcuReport& r, const char* name, const char* section) {
  const NcuMetricRow* row = r.find(name);
  if (row == nullptr)
    throw NcuReportError(std::string("no '") + name + "' row (ncu prints it in section " + section +
                         "; profile with --section " + section + ")");
  if (std::isnan(row->value)) throw NcuReportError(std::string("'") + name + "' is '" + row->text + "', not a number");
  return *row;
}

double percent(const NcuReport& r, const char* name, const char* section) {
  const NcuMetricRow& row = required(r, name, section);
  if (row.unit != "%") throw NcuReportError(std::string("'") + name + "' has unit '" + row.unit + "'; expected '%'");
  return row.value;
}

}  // namespace

double NcuReport::dram_throughput_pct() const { return percent(*this, "DRAM Throughput", "SpeedOfLight"); }

double NcuReport::achieved_occupancy_pct() const { return percent(*this, "Achieved Occupancy", "Occupancy"); }

double NcuReport::duration_us() const {
  const NcuMetricRow& row = required(*this, "Duration", "SpeedOfLight");
  const std::string u = lower(row.unit);
  if (u == "us" || u == "usecond") return row.value;
  if (u == "ns" || u == "nsecond") return row.value * 1e-3;
  if (u == "ms" || u == "msecond") return row.value * 1e3;
  if (u == "s" || u == "second") return row.value * 1e6;
  throw NcuReportError("'Duration' has unit '" + row.unit + "'; expected one of ns, us, ms, s");
}

double NcuReport::sm_frequency_ghz() const {
  const NcuMetricRow& row = required(*this, "SM Frequency", "SpeedOfLight");
  const std::string u = lower(row.unit);
  if (u == "ghz" || u == "cycle/nsecond" || u == "cycle/ns") return row.value;
  if (u == "mhz" || u == "cycle/usecond" || u == "cycle/us") return row.value * 1e-3;
  if (u == "hz" || u == "cycle/second" || u == "cycle/s") return row.value * 1e-9;
  throw NcuReportError("'SM Frequency' has unit '" + row.unit + "'; expected GHz, MHz or cycle/nsecond");
}

std::string tilepath_case_of_line(const std::string& line) {
  static const std::regex summary_case(R"(^case\s+(\S.*?)\s*$)");
  std::smatch m;
  return std::regex_match(line, m, summary_case) ? std::string(m[1]) : std::string();
}

std::string tilepath_cubin_of_line(const std::string& line) {
  static const std::regex summary_cubin(R"(^cubin\s+([0-9a-f]{64})\s*$)");
  std::smatch m;
  return std::regex_match(line, m, summary_cubin) ? std::string(m[1]) : std::string();
}

NcuReport parse_ncu_report(std::string_view text, const std::string& source) {
  // "  void kernel<...>(Params) (1, 8, 64)x(64, 1, 1), Context 1, Stream 13, Device 0, CC 9.0"
  static const std::regex launch(R"(^\s+(\S.*?) \(\d+, \d+, \d+\)x\(\d+, \d+, \d+\), Context \d+, Stream \d+)");
  static const std::regex section(R"(^\s*Section: (.*\S)\s*$)");
  static const std::regex stall(R"(^smsp__average_warps_issue_stalled_([a-z0-9_]+)_per_issue_active\.ratio$)");

  NcuReport report;
  int launches = 0;
  std::string current_section;
  const std::vector<std::string> lines = split_lines(text);
  std::smatch m;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (std::regex_search(line, m, launch)) {
      if (++launches == 1) report.kernel = m[1];
      current_section.clear();
      continue;
    }
    if (report.tilepath_case.empty()) {
      report.tilepath_case = tilepath_case_of_line(line);
      if (!report.tilepath_case.empty()) continue;
    }
    if (report.tilepath_cubin.empty()) {
      report.tilepath_cubin = tilepath_cubin_of_line(line);
      if (!report.tilepath_cubin.empty()) continue;
    }
    if (std::regex_match(line, m, section)) {
      current_section = m[1];
      continue;
    }
    // A table: rule, "Metric Name  Metric Unit  Metric Value", rule, rows..., rule.
    const auto cols = rule_columns(line);
    if (cols.size() != 3 || i + 2 >= lines.size() || lines[i + 1].find("Metric Name") == std::string::npos ||
        rule_columns(lines[i + 2]).size() != 3)
      continue;
    std::size_t r = i + 3;
    for (; r < lines.size() && rule_columns(lines[r]).empty(); ++r) {
      const std::string& row_line = lines[r];
      if (trim(row_line).empty()) continue;
      NcuMetricRow row;
      row.section = current_section;
      row.name = cut(row_line, 0, cols[1].first);
      row.unit = cut(row_line, cols[1].first, cols[2].first);
      row.text = cut(row_line, cols[2].first, std::string::npos);
      row.value = cell_number(row.text);
      if (launches > 1) continue;  // only the first launch's rows are kept (and the report is refused below)
      if (std::regex_match(row.name, m, stall)) report.stalls.push_back({m[1], row.value});
      report.rows.push_back(std::move(row));
    }
    i = r;  // the closing rule
  }
  if (launches == 0)
    throw NcuReportError(source + ": no profiled kernel launch in this ncu report (did --kernel-name match?)");
  if (launches > 1)
    throw NcuReportError(source + ": " + std::to_string(launches) +
                         " profiled kernel launches in this ncu report; attach one launch per case (--launch-count 1)");
  if (report.rows.empty()) throw NcuReportError(source + ": the ncu report has no section tables");
  return report;
}

}  // namespace tilepath::perf
