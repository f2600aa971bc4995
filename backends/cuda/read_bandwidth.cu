#include "backends/cuda/read_bandwidth.h"

#include <algorithm>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/event_timer.h"

namespace tilepath::cuda {
namespace {

constexpr int kThreads = 512;
constexpr int kLoadsInFlight = 4;  // independent 16-byte loads issued before the first use

// Each thread reads kLoadsInFlight uint4 per iteration, strided by the whole grid
// so that a warp's loads are coalesced. The XOR of everything read is written
// only in an impossible case so the loads cannot be optimised away.
// kStreaming: evict-first loads (__ldcs) for the bandwidth measurement; plain
// loads for the L2 flush, whose purpose is to leave L2 full of unrelated lines.
template <bool kStreaming>
__device__ __forceinline__ uint4 load16(const uint4* p) {
  if constexpr (kStreaming)
    return __ldcs(p);
  else
    return *p;
}

template <bool kStreaming>
__global__ void __launch_bounds__(kThreads)
    stream_read_kernel(const uint4* __restrict__ data, std::size_t count, unsigned* __restrict__ sink) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (; i + (kLoadsInFlight - 1) * stride < count; i += kLoadsInFlight * stride) {
    uint4 v[kLoadsInFlight];
#pragma unroll
    for (int k = 0; k < kLoadsInFlight; ++k) v[k] = load16<kStreaming>(data + i + k * stride);
#pragma unroll
    for (int k = 0; k < kLoadsInFlight; ++k) {
      acc.x ^= v[k].x;
      acc.y ^= v[k].y;
      acc.z ^= v[k].z;
      acc.w ^= v[k].w;
    }
  }
  for (; i < count; i += stride) {
    const uint4 v = load16<kStreaming>(data + i);
    acc.x ^= v.x;
    acc.y ^= v.y;
    acc.z ^= v.z;
    acc.w ^= v.w;
  }
  if ((acc.x & acc.y & acc.z & acc.w) == 0xFFFFFFFFu) sink[0] = acc.x ^ acc.w;
}

}  // namespace

cudaError_t launch_stream_read(const void* buffer, std::size_t bytes, unsigned* sink, int sm_count,
                               cudaStream_t stream) {
  // Four blocks of 512 threads per SM fill Hopper's 2048 thread slots.
  const int blocks = std::max(1, sm_count) * 4;
  stream_read_kernel<true><<<blocks, kThreads, 0, stream>>>(static_cast<const uint4*>(buffer), bytes / 16, sink);
  return cudaGetLastError();
}

cudaError_t launch_flush_read(const void* buffer, std::size_t bytes, unsigned* sink, int sm_count,
                              cudaStream_t stream) {
  const int blocks = std::max(1, sm_count) * 4;
  stream_read_kernel<false><<<blocks, kThreads, 0, stream>>>(static_cast<const uint4*>(buffer), bytes / 16, sink);
  return cudaGetLastError();
}

ReadBandwidth measure_read_bandwidth(int device, cudaStream_t stream, DeviceBuffer& buffer, int warmup, int repeats) {
  int l2_bytes = 0;
  TP_CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
  ReadBandwidth result;
  result.bytes = std::max<std::size_t>(std::size_t(1) << 30, std::size_t(l2_bytes) * 32);
  result.bytes &= ~std::size_t(15);
  buffer.reserve(result.bytes);
  // Never measure on zeros.
  TP_CUDA_CHECK(cudaMemsetAsync(buffer.get(), 0x5A, result.bytes, stream));
  const TimingStats stats = time_stream_read(buffer, result.bytes, device, stream, nullptr, warmup, repeats);
  result.median_us = stats.median_us;
  result.min_us = stats.min_us;
  result.max_us = stats.max_us;
  result.repeats = stats.repeats;
  result.gbps = double(result.bytes) / (stats.median_us * 1e-6) / 1e9;
  return result;
}

TimingStats time_stream_read(const DeviceBuffer& buffer, std::size_t bytes, int device, cudaStream_t stream,
                             const std::function<void()>& before_each, int warmup, int repeats, double min_warmup_ms) {
  int sm_count = 0;
  TP_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
  bytes = std::min(bytes, buffer.capacity()) & ~std::size_t(15);
  DeviceBuffer sink(sizeof(unsigned));
  const auto launch = [&] {
    TP_CUDA_CHECK(launch_stream_read(buffer.get(), bytes, sink.as<unsigned>(), sm_count, stream));
  };
  return time_launches(launch, before_each, stream, warmup, repeats, min_warmup_ms);
}

}  // namespace tilepath::cuda
