#pragma once
// Times device work with CUDA events: warm-up launches (at least `warmup` of them and,
// when warmup > 0, at least min_warmup_ms of device work), then `repeats` timed launches each bracketed
// by its own event pair; median, min and max.

#include <functional>
#include <vector>

#include <cuda_runtime_api.h>

namespace tilepath::cuda {

struct TimingStats {
  double median_us = 0, min_us = 0, max_us = 0;
  int repeats = 0;
  std::vector<double> samples_us;
};

// The GPU raises its clocks over milliseconds of load: after an idle gap (a new
// process, a host-side phase) five launches of a 140 us kernel are not enough
// (the first B=64, S=4096 K8/V8 case of a fresh process measured 148 us, the same
// case later 141 us; H200, 2026-11-29).
inline constexpr double kMinWarmupMs = 30.0;

// launch: enqueues the timed work on `stream` (throws on error).
// before_each: optional untimed work enqueued before every launch (the L2 flush
// for hbm_cold); it runs before the start event so it is never in the timing.
TimingStats time_launches(const std::function<void()>& launch, const std::function<void()>& before_each,
                          cudaStream_t stream, int warmup, int repeats, double min_warmup_ms = kMinWarmupMs);

// Median of a sample (by value; empty -> NaN).
double median_of(std::vector<double> values);

}  // namespace tilepath::cuda
