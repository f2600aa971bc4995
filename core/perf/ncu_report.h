#pragma once
// Numbers from the text output of Nsight Compute (`ncu ... <app>` printed to a file,
// as backends/cuda/scripts/device_run.sh writes it): the rows of its section tables
// ("Metric Name / Metric Unit / Metric Value") for one profiled kernel launch, the
// per-reason stall metrics when they were requested with --metrics, and the
// `tilepath run` summary line of the profiled process. No Qt, no SQLite.

#include <cmath>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tilepath::perf {

// A report that lacks what is asked of it; what() is one line naming the row or section.
class NcuReportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One row of a section table, as printed ("Achieved Occupancy", "%", 11.79).
struct NcuMetricRow {
  std::string section;  // "Occupancy", "GPU Speed Of Light Throughput", "Command line profiler metrics", ...
  std::string name;
  std::string unit;    // may be empty
  std::string text;    // the value cell as printed ("232,484", "no data")
  double value = NAN;  // the cell as a number (thousands separators removed); NaN when not a number
};

// smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio: the average number
// of warps stalled on <reason> per issue-active cycle, i.e. the cycles between two
// issued instructions of a warp that this reason accounts for (the reasons add up to
// about "Warp Cycles Per Issued Instruction").
struct NcuStall {
  std::string reason;  // long_scoreboard, barrier, math_pipe_throttle, ...
  double cycles_per_issue = NAN;
};

struct NcuReport {
  std::string kernel;              // the profiled launch as ncu names it ("void decode_attention_kernel<...>(...)")
  std::string tilepath_case;       // the "case ..." line of the `tilepath run` summary, if the report has one
  std::string tilepath_cubin;      // the "cubin ..." line of that summary (the kernel's cubin sha256), if any
  std::vector<NcuMetricRow> rows;  // every section-table row, in report order
  std::vector<NcuStall> stalls;    // per-reason stall metrics, in report order (empty when not collected)

  // The n largest stall reasons, largest first. Leaves out `selected` (the cycle a warp
  // issues, not a stall) and any `*_not_issued` variant (a subset of its reason).
  std::vector<NcuStall> top_stalls(std::size_t n) const;

  // The first row with this name (any section); nullptr when absent.
  const NcuMetricRow* find(std::string_view name) const;

  // Required values, converted to the unit in the name (Duration in ms/ns/s scaled to
  // us, SM Frequency in MHz or cycle/nsecond to GHz). Throw NcuReportError naming the
  // row (and the section ncu prints it in) when it is missing or not a number.
  double dram_throughput_pct() const;     // "DRAM Throughput", %        (section SpeedOfLight)
  double duration_us() const;             // "Duration"                  (section SpeedOfLight)
  double sm_frequency_ghz() const;        // "SM Frequency"              (section SpeedOfLight)
  double achieved_occupancy_pct() const;  // "Achieved Occupancy", %     (section Occupancy)
};

// The case of a `tilepath run` summary line ("case   k8v8/fp8_qk/k_only B=64 ..."), which
// ncu's output carries from the profiled process; "" for any other line.
std::string tilepath_case_of_line(const std::string& line);

// The cubin of a `tilepath run` summary line ("cubin   <sha256 of the kernel's cubin>"): which
// build of the kernel the profiled process ran; "" for any other line.
std::string tilepath_cubin_of_line(const std::string& line);

// Parses one report holding exactly one profiled kernel launch (`--launch-count 1`).
// `source` names the file in errors. Throws NcuReportError when no launch or more
// than one was profiled.
NcuReport parse_ncu_report(std::string_view text, const std::string& source);

}  // namespace tilepath::perf
