#pragma once
// The read ceiling of this machine, measured in the same run as the kernel (the
// byte floor's denominator): a multithreaded streaming read over a buffer much
// larger than the caches.

#include <cstddef>
#include <cstdint>
#include <memory>

namespace tilepath::cpu {

inline constexpr std::size_t kBandwidthBufferBytes = std::size_t{256} << 20;  // 256 MiB

// Keeps its buffer between measurements: first-touching 256 MiB costs far more than
// reading it, so a plugin holds one probe and every run_case re-reads the same pages.
class ReadBandwidthProbe {
 public:
  explicit ReadBandwidthProbe(std::size_t buffer_bytes = kBandwidthBufferBytes) : bytes_(buffer_bytes) {}
  // Best of `passes` full reads on `threads` threads, in GB/s (1e9 bytes/s).
  double measure_gbps(int threads, int passes = 3);
  std::size_t buffer_bytes() const { return bytes_; }

 private:
  void allocate(int threads);
  std::size_t bytes_;
  std::unique_ptr<std::uint64_t[]> buffer_;
};

// One-off measurement with a temporary buffer.
double measure_read_bandwidth_gbps(int threads, std::size_t buffer_bytes = kBandwidthBufferBytes, int passes = 3);

}  // namespace tilepath::cpu
