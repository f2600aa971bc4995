#include "backends/hip/device_enumeration.h"

#include <hip/hip_runtime_api.h>

#include <string>

#include "backends/abi/tilepath_plugin.h"
#include "backends/hip/hip_check.h"

namespace tilepath::hip {

DeviceSurvey survey_devices() {
  DeviceSurvey survey;
  int count = 0;
  if (const hipError_t e = hipGetDeviceCount(&count); e != hipSuccess) {
    survey.no_device_reason = "hipGetDeviceCount: " + hip_error_text(e) +
                              "; the HIP backend needs an AMD Instinct MI300 (gfx942) with the ROCm driver (amdgpu, "
                              "/dev/kfd)";
    return survey;
  }
  for (int d = 0; d < count; ++d) {
    hipDeviceProp_t prop{};
    if (hipGetDeviceProperties(&prop, d) != hipSuccess) continue;
    tp_device_info info{};
    info.struct_size = sizeof(tp_device_info);
    plugin::copy_text(info.name, prop.name);
    plugin::copy_text(info.arch, prop.gcnArchName);
    info.sm_count = prop.multiProcessorCount;
    info.memory_bytes = prop.totalGlobalMem;
    // Nominal: 2 transfers per memory clock over the bus width (kHz x bits / 8 -> GB/s).
    info.bandwidth_gbps = 2.0 * prop.memoryClockRate * 1e3 * (prop.memoryBusWidth / 8.0) / 1e9;
    info.l2_bytes = static_cast<std::uint64_t>(prop.l2CacheSize);
    info.clock_mhz = prop.clockRate / 1e3;
    // The PCI bus id names the GPU on its host whatever HIP_VISIBLE_DEVICES makes its index.
    if (hipDeviceGetPCIBusId(info.uid, sizeof(info.uid), d) != hipSuccess)
      plugin::copy_text(info.uid, "hip:" + std::to_string(d));
    survey.devices.push_back(info);
  }
  if (survey.devices.empty())
    survey.no_device_reason = "hipGetDeviceCount reported " + std::to_string(count) + " devices";
  return survey;
}

}  // namespace tilepath::hip
