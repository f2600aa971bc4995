#pragma once
// Numbers from Nsight Compute's CSV output (`ncu --csv --page raw --print-units base
// --metrics ... <app>`): one row per profiled kernel launch, a column per metric, the
// metric units in the row under the header. The metrics tilepath stores per case
// (ncu_csv_measurements) come from this, not from ncu's human-readable text.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/perf/ncu_report.h"  // NcuReportError

namespace tilepath::perf {

struct NcuCsvValue {
  std::string text;    // the cell as printed
  std::string unit;    // from the units row ("byte", "%", "nsecond", ...); may be empty
  double value = NAN;  // the cell as a number (thousands separators removed); NaN for "n/a" and text
};

struct NcuCsvLaunch {
  std::string id;                              // ncu's launch ID
  std::string kernel;                          // "Kernel Name" ("decode_attention_kernel<...>" or its demangled form)
  std::map<std::string, NcuCsvValue> metrics;  // metric name -> value; ncu's own columns too ("Block Size", ...)
  const NcuCsvValue* find(std::string_view metric) const;
};

struct NcuCsvReport {
  std::vector<NcuCsvLaunch> launches;  // in file order
  // The "case ..." line of the `tilepath run` summary printed before the CSV, if the file has
  // one (the case as the CLI names it: "k8v8/fp8_qk/k_only/wgmma B=64 S=4096 ...").
  std::string tilepath_case;
  // The "cubin ..." line of that summary: the sha256 of the profiled kernel's cubin, if any.
  std::string tilepath_cubin;
  // The first launch whose kernel name contains `name`; nullptr when none.
  const NcuCsvLaunch* first_launch_of(std::string_view name) const;
  // The first launch of a decode step's main kernel (is_main_decode_kernel); nullptr when none.
  const NcuCsvLaunch* first_main_kernel_launch() const;
};

// Whether ncu's kernel name is one of the CUDA plugin's main decode kernels: the mma.sync
// family's decode_attention_kernel or the wgmma family's decode_wgmma_kernel (not the
// split-KV combine, not the read kernel of the bandwidth measurement and the L2 flush).
bool is_main_decode_kernel(std::string_view kernel);

// ncu's --kernel-name argument that selects exactly those kernels.
std::string ncu_main_kernel_filter();

// Lines before the CSV header (ncu's ==PROF== lines, the application's own output) are
// skipped. Throws NcuReportError naming `source` when there is no header with an "ID" and
// a "Kernel Name" column, no units row, or no launch.
NcuCsvReport parse_ncu_csv(std::string_view text, const std::string& source);

// One value stored as a case measurement.
struct NcuCsvMeasurement {
  std::string name;  // ncu_dram_bytes_read, ncu_l2_hit_rate_pct, ncu_stall_<reason>_cycles, ...
  double value = NAN;
  std::string unit;
};

// What tilepath keeps of one launch, in units of its own (bytes, %, us, cycles, instructions):
//   dram__bytes_read.sum / dram__bytes_write.sum           -> ncu_dram_bytes_read / _written  (byte)
//   lts__t_sector_hit_rate.pct                              -> ncu_l2_hit_rate_pct
//   sm__warps_active.avg.pct_of_peak_sustained_active       -> ncu_achieved_occupancy_pct
//   gpu__time_duration.sum                                  -> ncu_duration_us
//   smsp__average_warps_issue_stalled_<r>_per_issue_active.ratio -> ncu_stall_<r>_cycles
//   l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum / _st.sum -> ncu_smem_bank_conflicts_ld / _st
//   sm__inst_executed_pipe_<pipe>.sum                       -> ncu_inst_pipe_<pipe>
// A metric that is absent or not a number is left out; a byte or time unit that is not
// known throws NcuReportError naming the metric.
std::vector<NcuCsvMeasurement> ncu_csv_measurements(const NcuCsvLaunch& launch, const std::string& source);

// The metrics to request from ncu for ncu_csv_measurements (a --metrics argument).
std::string ncu_csv_metric_list();

}  // namespace tilepath::perf
