#pragma once
// The ceiling: a streaming read kernel (16-byte loads, grid-stride, several
// loads in flight per thread) over a buffer much larger than L2.

#include <cstddef>
#include <functional>

#include <cuda_runtime_api.h>

#include "backends/cuda/device_buffer.h"
#include "backends/cuda/event_timer.h"

namespace tilepath::cuda {

struct ReadBandwidth {
  double gbps = 0;  // bytes / median time
  double median_us = 0, min_us = 0, max_us = 0;
  std::size_t bytes = 0;
  int repeats = 0;
};

// Buffer size: max(1 GiB, 32 x L2), allocated into `buffer` (kept by the caller for
// time_stream_read).
ReadBandwidth measure_read_bandwidth(int device, cudaStream_t stream, DeviceBuffer& buffer, int warmup = 3,
                                     int repeats = 20);

// The read kernel over the first `bytes` of `buffer` (<= its capacity), timed like a
// decode case (time_launches; `before_each`: the L2 flush of an hbm_cold case): a
// perfect stream of a case's bytes, launch and ramp included, to set its latency against.
TimingStats time_stream_read(const DeviceBuffer& buffer, std::size_t bytes, int device, cudaStream_t stream,
                             const std::function<void()>& before_each, int warmup, int repeats,
                             double min_warmup_ms = kMinWarmupMs);

// One launch of the read kernel over `bytes` (a multiple of 16) at `buffer`.
cudaError_t launch_stream_read(const void* buffer, std::size_t bytes, unsigned* sink, int sm_count,
                               cudaStream_t stream);
// The same kernel with ordinary (cache-allocating) loads; used by L2Flusher.
cudaError_t launch_flush_read(const void* buffer, std::size_t bytes, unsigned* sink, int sm_count, cudaStream_t stream);

}  // namespace tilepath::cuda
