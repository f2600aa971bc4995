#pragma once
// The ceiling: a streaming read kernel (16-byte loads, grid-stride, several
// loads in flight per thread) over a buffer much larger than L2.

#include <cstddef>

#include <cuda_runtime_api.h>

namespace tilepath::cuda {

struct ReadBandwidth {
  double gbps = 0;          // bytes / median time
  double median_us = 0, min_us = 0, max_us = 0;
  std::size_t bytes = 0;
  int repeats = 0;
};

// Buffer size: max(1 GiB, 32 x L2). Allocates and frees its own buffer.
ReadBandwidth measure_read_bandwidth(int device, cudaStream_t stream, int warmup = 3, int repeats = 20);

// One launch of the read kernel over `bytes` (a multiple of 16) at `buffer`.
cudaError_t launch_stream_read(const void* buffer, std::size_t bytes, unsigned* sink, int sm_count,
                               cudaStream_t stream);
// The same kernel with ordinary (cache-allocating) loads; used by L2Flusher.
cudaError_t launch_flush_read(const void* buffer, std::size_t bytes, unsigned* sink, int sm_count,
                              cudaStream_t stream);

}  // namespace tilepath::cuda
