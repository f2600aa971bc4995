#pragma once
// Helpers shared by the CUDA tests.

#include <cstdlib>
#include <string>

#include <cuda_runtime_api.h>

#include "core/operating_point.h"

namespace tilepath::cuda::test {

// The (kv, K path, mode) of every wgmma kernel (no separate_kv, no prebias).
struct WgmmaVariant {
  KvDtype kv;
  KPath path;
  TransformMode mode;
};
inline constexpr WgmmaVariant kWgmmaVariants[] = {
    {KvDtype::k8v8, KPath::fp8_qk, TransformMode::full},    {KvDtype::k8v8, KPath::fp8_qk, TransformMode::k_only},
    {KvDtype::k8v8, KPath::transform, TransformMode::full}, {KvDtype::k8v8, KPath::transform, TransformMode::k_only},
    {KvDtype::k16v16, KPath::k16, TransformMode::none},     {KvDtype::k16v8, KPath::k16, TransformMode::full},
    {KvDtype::k8v16, KPath::fp8_qk, TransformMode::none},   {KvDtype::k8v16, KPath::transform, TransformMode::full}};

// "" when a CUDA device is usable, else why not (cudaGetDeviceCount's error).
inline std::string no_cuda_device_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
  }
  return count > 0 ? "" : "cudaGetDeviceCount reported 0 devices";
}

// The plugin file: $TILEPATH_PLUGIN_PATH (a dir) when set (the device machine
// runs a copied build tree), else the build tree's plugins/ dir.
inline std::string cuda_plugin_file() {
  const char* env = std::getenv("TILEPATH_PLUGIN_PATH");
  const std::string dir = env && *env ? std::string(env) : std::string(TILEPATH_PLUGIN_DIR);
  return dir + "/libtilepath_backend_cuda.so";
}

}  // namespace tilepath::cuda::test
