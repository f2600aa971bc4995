#pragma once
// Leaves L2 holding none of a case's data before an hbm_cold launch.
//
// It reads a private buffer of 4 x L2 bytes with ordinary (cache-allocating)
// loads. A read rather than a write (memset) so that L2 ends up full of CLEAN
// lines: dirty lines from a write-flush would be written back during the timed
// decode and bill it for HBM writes it did not cause.

#include <cstddef>

#include <cuda_runtime_api.h>

#include "backends/cuda/device_buffer.h"

namespace tilepath::cuda {

class L2Flusher {
 public:
  L2Flusher() = default;
  // Allocates the flush buffer for `device` (first call only).
  void prepare(int device, cudaStream_t stream);
  // Enqueue one flush on stream (not timed by the caller).
  void flush(cudaStream_t stream);
  std::size_t bytes() const { return bytes_; }

 private:
  DeviceBuffer buffer_, sink_;
  std::size_t bytes_ = 0;
  int sm_count_ = 0;
};

}  // namespace tilepath::cuda
