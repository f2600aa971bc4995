#pragma once
// Fitting the coefficients of the CUDA kernel model (core/perf/cuda_latency_model.h) to
// measured decode-step latencies, and measuring how far the model is off
// (docs/sim-model.md): relative latency error |predicted - measured| / measured.

#include <optional>
#include <string>
#include <vector>

#include "core/operating_point.h"
#include "core/perf/cuda_latency_model.h"

namespace tilepath::perf {

struct MeasuredLatency {
  OperatingPoint op;  // as run (splits as the backend chose them)
  double latency_us = 0;
};

// Shapes never used in a fit: a case is held out when it matches any entry, an entry
// matching on every field it names (batch, context, head_dim, kv).
struct HeldOutShapes {
  struct Match {
    std::optional<int> batch, context, head_dim;
    std::optional<std::string> kv;
  };
  std::string file;
  std::vector<Match> entries;  // from [{"context": 2048}, {"batch": 16}, ...]
  bool holds_out(const OperatingPoint& op) const;
};
HeldOutShapes load_held_out_shapes(const std::string& path);

struct LatencyErrors {
  int cases = 0;
  double median = 0, p90 = 0, worst = 0;  // relative errors
};
LatencyErrors latency_errors(const std::vector<MeasuredLatency>& cases, const GpuModel& gpu, const CudaKernelFit& fit);

// Nelder-Mead on the mean squared relative error, from `start` (every coefficient kept
// >= 0 and the bandwidth efficiency <= 1). Deterministic.
CudaKernelFit fit_cuda_kernel(const std::vector<MeasuredLatency>& train, const GpuModel& gpu,
                              const CudaKernelFit& start, int iterations = 3000);

}  // namespace tilepath::perf
