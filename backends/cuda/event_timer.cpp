#include "backends/cuda/event_timer.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "backends/cuda/cuda_check.h"

namespace tilepath::cuda {
namespace {

// Events are created once per call and destroyed even when a launch throws.
struct EventPairs {
  std::vector<cudaEvent_t> start, stop;
  explicit EventPairs(int n) : start(n, nullptr), stop(n, nullptr) {
    for (int i = 0; i < n; ++i) {
      TP_CUDA_CHECK(cudaEventCreate(&start[i]));
      TP_CUDA_CHECK(cudaEventCreate(&stop[i]));
    }
  }
  ~EventPairs() {
    for (auto e : start)
      if (e) cudaEventDestroy(e);
    for (auto e : stop)
      if (e) cudaEventDestroy(e);
  }
};

}  // namespace

double median_of(std::vector<double> values) {
  if (values.empty()) return NAN;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

TimingStats time_launches(const std::function<void()>& launch, const std::function<void()>& before_each,
                          cudaStream_t stream, int warmup, int repeats, double min_warmup_ms) {
  repeats = std::max(1, repeats);
  // Warm up in batches until both the count and the device time are reached; the
  // synchronise per batch makes the host clock measure device work.
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed_ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  constexpr int kBatch = 8, kMaxWarmup = 4096;
  if (warmup <= 0) min_warmup_ms = 0;
  for (int done = 0; done < kMaxWarmup && (done < warmup || elapsed_ms() < min_warmup_ms);) {
    for (int i = 0; i < kBatch && (done < warmup || min_warmup_ms > 0); ++i, ++done) {
      if (before_each) before_each();
      launch();
    }
    TP_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  EventPairs events(repeats);
  for (int i = 0; i < repeats; ++i) {
    if (before_each) before_each();
    TP_CUDA_CHECK(cudaEventRecord(events.start[i], stream));
    launch();
    TP_CUDA_CHECK(cudaEventRecord(events.stop[i], stream));
  }
  TP_CUDA_CHECK(cudaStreamSynchronize(stream));
  TimingStats stats;
  stats.repeats = repeats;
  for (int i = 0; i < repeats; ++i) {
    float ms = 0;
    TP_CUDA_CHECK(cudaEventElapsedTime(&ms, events.start[i], events.stop[i]));
    stats.samples_us.push_back(double(ms) * 1000.0);
  }
  stats.median_us = median_of(stats.samples_us);
  stats.min_us = *std::min_element(stats.samples_us.begin(), stats.samples_us.end());
  stats.max_us = *std::max_element(stats.samples_us.begin(), stats.samples_us.end());
  return stats;
}

}  // namespace tilepath::cuda
