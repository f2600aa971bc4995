#pragma once
// Every CUDA runtime call goes through TP_CUDA_CHECK. A failure throws
// CudaCallError naming the call, file:line and cudaGetErrorString; the plugin
// boundary (plugin.cpp) turns it into TP_ERR_RUNTIME with that message.

#include <stdexcept>
#include <string>

#include <cuda_runtime_api.h>

namespace tilepath::cuda {

class CudaCallError : public std::runtime_error {
 public:
  CudaCallError(cudaError_t code, const char* call, const char* file, int line)
      : std::runtime_error(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                           cudaGetErrorName(code) + " (" + cudaGetErrorString(code) + ")"),
        code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

}  // namespace tilepath::cuda

#define TP_CUDA_CHECK(call)                                                              \
  do {                                                                                   \
    const cudaError_t tp_cuda_status_ = (call);                                          \
    if (tp_cuda_status_ != cudaSuccess)                                                  \
      throw ::tilepath::cuda::CudaCallError(tp_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)
