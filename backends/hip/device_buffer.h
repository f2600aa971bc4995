#pragma once
// An owning device allocation (hipMalloc/hipFree), moved not copied.

#include <cstddef>
#include <utility>
#include <vector>

#include "backends/hip/hip_check.h"

namespace tilepath::hip {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes_) TP_HIP_CHECK(hipMalloc(&ptr_, bytes_));
  }
  template <class T>
  static DeviceBuffer upload(const std::vector<T>& host) {
    DeviceBuffer b(host.size() * sizeof(T));
    if (b.bytes_) TP_HIP_CHECK(hipMemcpy(b.ptr_, host.data(), b.bytes_, hipMemcpyHostToDevice));
    return b;
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_) (void)hipFree(ptr_);
  }
  template <class T = void>
  T* get() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace tilepath::hip
