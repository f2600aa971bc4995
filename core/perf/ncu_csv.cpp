#include "core/perf/ncu_csv.h"

#include <cmath>
#include <cstdlib>

namespace tilepath::perf {
namespace {

// The CUDA plugin's main decode kernels, as ncu names them (a substring of the full name).
constexpr std::string_view kMainDecodeKernels[] = {"decode_attention_kernel", "decode_wgmma_kernel"};

// One CSV record of a line: quoted fields may hold commas; "" inside quotes is a quote.
std::vector<std::string> csv_fields(std::string_view line) {
  std::vector<std::string> out;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(field);
      field.clear();
    } else if (c != '\r') {
      field += c;
    }
  }
  out.push_back(field);
  return out;
}

double number_of(const std::string& text) {
  std::string digits;
  for (char c : text)
    if (c != ',' && c != ' ') digits += c;
  if (digits.empty()) return NAN;
  char* end = nullptr;
  const double v = std::strtod(digits.c_str(), &end);
  return end && *end == '\0' ? v : NAN;
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = text.find('\n', start);
    out.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

double bytes_factor(const std::string& unit, const std::string& metric, const std::string& source) {
  if (unit == "byte") return 1;
  if (unit == "Kbyte") return 1e3;
  if (unit == "Mbyte") return 1e6;
  if (unit == "Gbyte") return 1e9;
  throw NcuReportError(source + ": metric " + metric + " has unit '" + unit +
                       "', not a byte unit (byte, Kbyte, Mbyte, Gbyte); profile with --print-units base");
}

double us_factor(const std::string& unit, const std::string& metric, const std::string& source) {
  if (unit == "nsecond" || unit == "ns") return 1e-3;
  if (unit == "usecond" || unit == "us") return 1;
  if (unit == "msecond" || unit == "ms") return 1e3;
  if (unit == "second" || unit == "s") return 1e6;
  throw NcuReportError(source + ": metric " + metric + " has unit '" + unit +
                       "', not a time unit (nsecond, usecond, msecond, second)");
}

}  // namespace

const NcuCsvValue* NcuCsvLaunch::find(std::string_view metric) const {
  const auto it = metrics.find(std::string(metric));
  return it == metrics.end() ? nullptr : &it->second;
}

const NcuCsvLaunch* NcuCsvReport::first_launch_of(std::string_view name) const {
  for (const NcuCsvLaunch& l : launches)
    if (l.kernel.find(name) != std::string::npos) return &l;
  return nullptr;
}

const NcuCsvLaunch* NcuCsvReport::first_main_kernel_launch() const {
  for (const NcuCsvLaunch& l : launches)
    if (is_main_decode_kernel(l.kernel)) return &l;
  return nullptr;
}

bool is_main_decode_kernel(std::string_view kernel) {
  for (std::string_view name : kMainDecodeKernels)
    if (kernel.find(name) != std::string_view::npos) return true;
  return false;
}

std::string ncu_main_kernel_filter() {
  std::string filter = "regex:";
  std::string_view separator;
  for (std::string_view name : kMainDecodeKernels) {
    (filter += separator) += name;
    separator = "|";
  }
  return filter;
}

NcuCsvReport parse_ncu_csv(std::string_view text, const std::string& source) {
  const std::vector<std::string_view> lines = lines_of(text);
  std::size_t header = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (starts_with(lines[i], "\"ID\",")) {
      header = i;
      break;
    }
  if (header == lines.size())
    throw NcuReportError(source + ": no ncu CSV header (a line starting \"ID\",); profile with --csv --page raw");
  NcuCsvReport report;
  for (std::size_t i = 0; i < header; ++i) {
    const std::string line(lines[i]);
    if (report.tilepath_case.empty()) report.tilepath_case = tilepath_case_of_line(line);
    if (report.tilepath_cubin.empty()) report.tilepath_cubin = tilepath_cubin_of_line(line);
  }
  const std::vector<std::string> names = csv_fields(lines[header]);
  int kernel_column = -1;
  for (std::size_t c = 0; c < names.size(); ++c)
    if (names[c] == "Kernel Name") kernel_column = static_cast<int>(c);
  if (kernel_column < 0) throw NcuReportError(source + ": the ncu CSV header has no \"Kernel Name\" column");
  if (header + 1 >= lines.size())
    throw NcuReportError(source + ": the ncu CSV has no units row under its header (ncu --page raw prints one)");
  const std::vector<std::string> units = csv_fields(lines[header + 1]);
  if (units.empty() || !units[0].empty())
    throw NcuReportError(source + ": the row under the ncu CSV header is not a units row (its ID cell is not empty)");

  for (std::size_t i = header + 2; i < lines.size(); ++i) {
    if (lines[i].empty() || !starts_with(lines[i], "\"")) continue;  // ncu's or the application's own lines
    const std::vector<std::string> cells = csv_fields(lines[i]);
    if (cells.size() != names.size())
      throw NcuReportError(source + ": line " + std::to_string(i + 1) + " has " + std::to_string(cells.size()) +
                           " cells, the header " + std::to_string(names.size()));
    NcuCsvLaunch launch;
    launch.id = cells[0];
    launch.kernel = cells[kernel_column];
    for (std::size_t c = 0; c < names.size(); ++c)
      launch.metrics[names[c]] = {cells[c], c < units.size() ? units[c] : std::string(), number_of(cells[c])};
    report.launches.push_back(std::move(launch));
  }
  if (report.launches.empty()) throw NcuReportError(source + ": the ncu CSV holds no profiled kernel launch");
  return report;
}

std::vector<NcuCsvMeasurement> ncu_csv_measurements(const NcuCsvLaunch& launch, const std::string& source) {
  std::vector<NcuCsvMeasurement> out;
  const auto value_of = [&](const char* metric) -> const NcuCsvValue* {
    const NcuCsvValue* v = launch.find(metric);
    return v && std::isfinite(v->value) ? v : nullptr;
  };
  for (const auto& [metric, name] : {std::pair{"dram__bytes_read.sum", "ncu_dram_bytes_read"},
                                     std::pair{"dram__bytes_write.sum", "ncu_dram_bytes_written"}})
    if (const NcuCsvValue* v = value_of(metric))
      out.push_back({name, v->value * bytes_factor(v->unit, metric, source), "byte"});
  if (const NcuCsvValue* v = value_of("lts__t_sector_hit_rate.pct"))
    out.push_back({"ncu_l2_hit_rate_pct", v->value, "%"});
  if (const NcuCsvValue* v = value_of("sm__warps_active.avg.pct_of_peak_sustained_active"))
    out.push_back({"ncu_achieved_occupancy_pct", v->value, "%"});
  if (const NcuCsvValue* v = value_of("gpu__time_duration.sum"))
    out.push_back({"ncu_duration_us", v->value * us_factor(v->unit, "gpu__time_duration.sum", source), "us"});
  if (const NcuCsvValue* v = value_of("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"))
    out.push_back({"ncu_smem_bank_conflicts_ld", v->value, ""});
  if (const NcuCsvValue* v = value_of("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"))
    out.push_back({"ncu_smem_bank_conflicts_st", v->value, ""});
  constexpr std::string_view kStall = "smsp__average_warps_issue_stalled_", kStallEnd = "_per_issue_active.ratio";
  constexpr std::string_view kPipe = "sm__inst_executed_pipe_", kPipeEnd = ".sum";
  for (const auto& [metric, v] : launch.metrics) {
    if (!std::isfinite(v.value)) continue;
    const std::string_view m = metric;
    if (starts_with(m, kStall) && ends_with(m, kStallEnd)) {
      const std::string_view reason = m.substr(kStall.size(), m.size() - kStall.size() - kStallEnd.size());
      out.push_back({"ncu_stall_" + std::string(reason) + "_cycles", v.value, "cycle"});
    } else if (starts_with(m, kPipe) && ends_with(m, kPipeEnd)) {
      const std::string_view pipe = m.substr(kPipe.size(), m.size() - kPipe.size() - kPipeEnd.size());
      out.push_back({"ncu_inst_pipe_" + std::string(pipe), v.value, "inst"});
    }
  }
  return out;
}

std::string ncu_csv_metric_list() {
  return "dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,"
         "sm__warps_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,"
         "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,"
         "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,"
         "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio,"
         "regex:sm__inst_executed_pipe_.*\\.sum";
}

}  // namespace tilepath::perf
