#include "backends/cpu/read_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace tilepath::cpu {

namespace {

// Sum of 64-bit words; four independent accumulators keep several loads in flight.
std::uint64_t read_words(const std::uint64_t* data, std::size_t count) {
  std::uint64_t a = 0, b = 0, c = 0, d = 0;
  std::size_t i = 0;
  for (; i + 4 <= count; i += 4) {
    a += data[i];
    b += data[i + 1];
    c += data[i + 2];
    d += data[i + 3];
  }
  for (; i < count; ++i) a += data[i];
  return a + b + c + d;
}

// fn(worker, begin, end) over equal word ranges on `workers` threads (the caller is worker 0).
template <class Fn>
void for_each_chunk(std::size_t words, int workers, Fn&& fn) {
  const std::size_t chunk = (words + workers - 1) / workers;
  auto run = [&](int w) {
    const std::size_t begin = std::min(words, w * chunk), end = std::min(words, begin + chunk);
    fn(begin, end);
  };
  std::vector<std::thread> pool;
  for (int w = 1; w < workers; ++w) pool.emplace_back(run, w);
  run(0);
  for (auto& t : pool) t.join();
}

}  // namespace

void ReadBandwidthProbe::allocate(int threads) {
  const std::size_t words = bytes_ / sizeof(std::uint64_t);
  buffer_.reset(new std::uint64_t[words]);
  // Each thread first-touches the range it will read, with nonzero data.
  for_each_chunk(words, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) buffer_[i] = i;
  });
}

double ReadBandwidthProbe::measure_gbps(int threads, int passes) {
  const int workers = std::max(1, threads);
  if (!buffer_) allocate(workers);
  const std::size_t words = bytes_ / sizeof(std::uint64_t);
  std::atomic<std::uint64_t> sink{0};  // a side effect, so the reads cannot be optimised away
  double best_seconds = 0;
  for (int pass = 0; pass < std::max(1, passes); ++pass) {
    const auto start = std::chrono::steady_clock::now();
    for_each_chunk(words, workers,
                   [&](std::size_t begin, std::size_t end) { sink += read_words(buffer_.get() + begin, end - begin); });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (pass == 0 || seconds < best_seconds) best_seconds = seconds;
  }
  return static_cast<double>(words * sizeof(std::uint64_t)) / best_seconds / 1e9;
}

double measure_read_bandwidth_gbps(int threads, std::size_t buffer_bytes, int passes) {
  ReadBandwidthProbe probe(buffer_bytes);
  return probe.measure_gbps(threads, passes);
}

}  // namespace tilepath::cpu
