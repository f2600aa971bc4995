#include "backends/cuda/device_enumeration.h"

#include <cstdio>
#include <cstring>

#include <cuda_runtime_api.h>

namespace tilepath::cuda {
namespace {

int attribute(cudaDeviceAttr attr, int device) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess) return 0;
  return value;
}

}  // namespace

std::string arch_name(int major, int minor) {
  std::string name = "sm_" + std::to_string(major) + std::to_string(minor);
  if (major == 9 && minor == 0) name += "a";
  return name;
}

DeviceSurvey survey_devices() {
  DeviceSurvey survey;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    survey.no_device_reason =
        std::string("cudaGetDeviceCount: ") + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return survey;
  }
  if (count == 0) {
    survey.no_device_reason = "cudaGetDeviceCount reported 0 CUDA devices";
    return survey;
  }
  for (int d = 0; d < count; ++d) {
    tp_device_info info{};
    info.struct_size = sizeof(tp_device_info);
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) {
      cudaGetLastError();
      std::snprintf(info.name, sizeof(info.name), "CUDA device %d (properties unavailable)", d);
    } else {
      // prop.name has 256 bytes, ours 128: a longer name is cut.
      std::snprintf(info.name, sizeof(info.name), "%.*s", int(sizeof(info.name) - 1), prop.name);
      std::snprintf(info.arch, sizeof(info.arch), "%s", arch_name(prop.major, prop.minor).c_str());
      info.memory_bytes = prop.totalGlobalMem;
    }
    info.sm_count = attribute(cudaDevAttrMultiProcessorCount, d);
    info.l2_bytes = std::uint64_t(attribute(cudaDevAttrL2CacheSize, d));
    info.clock_mhz = attribute(cudaDevAttrClockRate, d) / 1000.0;
    // Nominal: double data rate x memory clock x bus width. The measured read
    // bandwidth (the floor's denominator) is reported per case instead.
    const double memory_clock_hz = attribute(cudaDevAttrMemoryClockRate, d) * 1000.0;
    const double bus_bytes = attribute(cudaDevAttrGlobalMemoryBusWidth, d) / 8.0;
    info.bandwidth_gbps = 2.0 * memory_clock_hz * bus_bytes / 1e9;
    // The PCI bus id names the GPU on its host whatever CUDA_VISIBLE_DEVICES makes its index.
    if (cudaDeviceGetPCIBusId(info.uid, sizeof(info.uid), d) != cudaSuccess) {
      cudaGetLastError();
      std::snprintf(info.uid, sizeof(info.uid), "cuda:%d", d);
    }
    survey.devices.push_back(info);
  }
  return survey;
}

}  // namespace tilepath::cuda
