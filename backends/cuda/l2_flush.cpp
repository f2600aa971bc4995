#include "backends/cuda/l2_flush.h"

#include <algorithm>

#include "backends/cuda/read_bandwidth.h"

namespace tilepath::cuda {

void L2Flusher::prepare(int device, cudaStream_t stream) {
  if (bytes_) return;
  int l2_bytes = 0;
  TP_CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
  TP_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device));
  const std::size_t bytes = std::max<std::size_t>(std::size_t(l2_bytes) * 4, std::size_t(64) << 20) & ~std::size_t(15);
  buffer_.reserve(bytes);
  sink_.reserve(sizeof(unsigned));
  TP_CUDA_CHECK(cudaMemsetAsync(buffer_.get(), 0x3C, bytes, stream));
  bytes_ = bytes;
}

void L2Flusher::flush(cudaStream_t stream) {
  TP_CUDA_CHECK(launch_flush_read(buffer_.get(), bytes_, sink_.as<unsigned>(), sm_count_, stream));
}

}  // namespace tilepath::cuda
