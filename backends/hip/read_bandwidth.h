#pragma once
// The read-bandwidth ceiling of the device: a streaming read of a buffer several times the
// size of the Infinity Cache, 16-byte loads, grid-stride (kernels/read_stream.hip).

#include <cstddef>

#include <hip/hip_runtime_api.h>

namespace tilepath::hip {

// Reads `bytes` (a multiple of 16) from `buffer` once; `sink` receives a value that keeps
// the loads live. Launch errors are returned.
hipError_t launch_read_stream(const void* buffer, std::size_t bytes, unsigned* sink, int cu_count, hipStream_t stream);

}  // namespace tilepath::hip
