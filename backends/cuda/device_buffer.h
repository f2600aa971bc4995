#pragma once
// Owning device allocation (cudaMalloc/cudaFree). Grows on demand so that a
// sequence of cases reuses the same memory instead of reallocating per case.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_check.h"

namespace tilepath::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) { reserve(bytes); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), capacity_(std::exchange(other.capacity_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      ptr_ = std::exchange(other.ptr_, nullptr);
      capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
  }

  // Ensures at least `bytes` of capacity; contents are NOT preserved when it grows.
  void reserve(std::size_t bytes) {
    if (bytes <= capacity_) return;
    release();
    // Round up to 2 MiB so slightly larger cases do not reallocate.
    const std::size_t rounded = (bytes + (std::size_t(2) << 20) - 1) & ~((std::size_t(2) << 20) - 1);
    TP_CUDA_CHECK(cudaMalloc(&ptr_, rounded));
    capacity_ = rounded;
  }
  void release() noexcept {
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
    capacity_ = 0;
  }

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t capacity() const { return capacity_; }

  template <typename T>
  void upload(const std::vector<T>& host, cudaStream_t stream) {
    reserve(host.size() * sizeof(T) + 1);
    if (!host.empty())
      TP_CUDA_CHECK(cudaMemcpyAsync(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, stream));
  }

 private:
  void* ptr_ = nullptr;
  std::size_t capacity_ = 0;
};

}  // namespace tilepath::cuda
