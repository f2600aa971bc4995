#pragma once
// What CUDA devices exist, described in the ABI's terms.

#include <string>
#include <vector>

#include "backends/abi/tilepath_backend.h"

namespace tilepath::cuda {

struct DeviceSurvey {
  std::vector<tp_device_info> devices;
  std::string no_device_reason;  // "" when devices is non-empty
};

// Never throws: a missing driver or GPU becomes an empty list with the reason
// (cudaGetDeviceCount's error string).
DeviceSurvey survey_devices();

// "sm_90a" for compute capability 9.0 (we build the arch-specific Hopper target),
// "sm_<major><minor>" otherwise.
std::string arch_name(int major, int minor);

}  // namespace tilepath::cuda
