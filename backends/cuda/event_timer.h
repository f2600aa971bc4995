#pragma once
// Times device work with CUDA events: warm-up launches, then `repeats` timed
// launches each bracketed by its own event pair; median, min and max.

#include <functional>
#include <vector>

#include <cuda_runtime_api.h>

namespace tilepath::cuda {

struct TimingStats {
  double median_us = 0, min_us = 0, max_us = 0;
  int repeats = 0;
  std::vector<double> samples_us;
};

// launch: enqueues the timed work on `stream` (throws on error).
// before_each: optional untimed work enqueued before every launch (the L2 flush
// for hbm_cold); it runs before the start event so it is never in the timing.
TimingStats time_launches(const std::function<void()>& launch, const std::function<void()>& before_each,
                          cudaStream_t stream, int warmup, int repeats);

// Median of a sample (by value; empty -> NaN).
double median_of(std::vector<double> values);

}  // namespace tilepath::cuda
