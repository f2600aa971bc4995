#pragma once
// Everything run_case measures for one operating point, before it is copied into the
// C result: timings, tile interval, stage costs, the read ceiling and the error.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/abi/tilepath_backend.h"
#include "backends/cpu/read_bandwidth.h"
#include "backends/cpu/run_progress.h"
#include "core/numerics/decode_problem.h"
#include "core/numerics/gate_metrics.h"
#include "core/numerics/key_model.h"

namespace tilepath::cpu {

struct MeasureOptions {
  int warmup = 5;
  int repeats = 20;
  std::uint32_t ablations = 0;
  std::uint64_t seed = 1;
  numerics::KeyDistribution keys = numerics::KeyDistribution::gaussian;
  numerics::KeyModel key_model = numerics::builtin_key_model(numerics::KeyDistribution::gaussian);  // keys' parameters
  std::string save_tensors_dir;                                                                     // "" = don't save
  int threads = 1;
  // gfx942 numerics (device 1): the kernels run on the cache re-encoded to E4M3 FNUZ with Q
  // and P quantized to FNUZ (DecodeLaunch::fnuz); the kernel check's reference quantizes Q
  // to FNUZ too (QQuantization::e4m3_fnuz).
  bool fnuz = false;
};

struct CaseMeasurement {
  int status = TP_OK;
  std::string message;

  std::vector<double> latencies_us;
  double latency_median_us = 0, latency_min_us = 0, latency_max_us = 0;
  double tile_interval_us;  // NaN unless measured
  double read_bandwidth_gbps = 0;
  std::array<std::array<double, TP_STAGE_COUNT>, TP_COST_METHOD_COUNT> stage_cost_us;  // NaN = not measured

  int splits = 1, workers = 1, work_items = 0;
  long long tiles = 0;
  numerics::ErrorStats error;  // the kernel check over the verified requests
  int verified_requests = 0;   // requests checked against the reference (all unless huge)
  numerics::GateMetrics gate;  // the same requests against full precision (rows_total: every row)
  double tolerance = 0;
  double generation_ms = 0, reference_ms = 0;

  std::vector<float> out;
  nlohmann::json samples;  // raw timings (the samples.json artifact)

  CaseMeasurement();
};

// Generates the problem from options.seed and measures it. Never throws for a valid op;
// a cancelled run comes back with status TP_ERR_CANCELLED.
CaseMeasurement measure_case(const OperatingPoint& op, const MeasureOptions& options, RunProgress& progress,
                             ReadBandwidthProbe& bandwidth_probe);

// Number of progress units measure_case will use (for RunProgress).
int progress_units(const MeasureOptions& options);

// Which stages this variant's kernel actually runs (others stay NaN).
std::array<bool, TP_STAGE_COUNT> stages_present(const OperatingPoint& op, int splits);

}  // namespace tilepath::cpu
