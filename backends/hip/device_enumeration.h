#pragma once
// The AMD GPUs the HIP runtime sees. A missing ROCm driver or GPU is not an error: the
// survey has no devices and says why (hipGetDeviceCount's error).

#include <string>
#include <vector>

#include "backends/abi/tilepath_backend.h"

namespace tilepath::hip {

struct DeviceSurvey {
  std::vector<tp_device_info> devices;
  std::string no_device_reason;  // "" when there are devices
};

DeviceSurvey survey_devices();

// The architecture the kernels are compiled for.
inline constexpr const char* kKernelArch = "gfx942";

}  // namespace tilepath::hip
