#pragma once
// Run fn(i) for i in [0, n) on up to `threads` std::threads (0 = hardware threads).
// Work is handed out through an atomic counter so uneven items balance; results must
// not depend on which thread ran an item (callers write to disjoint slots).

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace tilepath::numerics {

inline int hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

template <class Fn>
void parallel_for(std::int64_t n, Fn&& fn, int threads = 0) {
  if (n <= 0) return;
  const int workers = static_cast<int>(std::min<std::int64_t>(threads > 0 ? threads : hardware_threads(), n));
  std::atomic<std::int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto worker = [&] {
    try {
      for (std::int64_t i = next++; i < n; i = next++) fn(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      next = n;  // stop the others early
    }
  };
  if (workers == 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(workers - 1);
    for (int w = 1; w < workers; ++w) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace tilepath::numerics
