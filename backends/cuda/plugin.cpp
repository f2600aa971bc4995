// The CUDA backend plugin: the one exported entry symbol and the ABI functions
// (backends/common/device_plugin.h over this folder's device survey and sessions).
// CUDA failures become TP_ERR_RUNTIME with the call, file:line and the CUDA error string.

#include <string>

#include "backends/common/device_plugin.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_enumeration.h"
#include "backends/cuda/device_session.h"

namespace tilepath::cuda {
namespace {

struct CudaBackend {
  static constexpr const char* kName = "cuda";
  using Survey = DeviceSurvey;
  using Session = DeviceSession;
  using CallError = CudaCallError;  // a sticky error (an illegal address) poisons the context
  static Survey survey() { return survey_devices(); }
  static std::string unsupported_reason(const OperatingPoint& op, const tp_device_info&, int device) {
    return cuda::unsupported_reason(op, device);
  }
};

// No kernel list: the kernel records come with each case (tp_result).
constexpr tp_backend_api kApi = plugin::DevicePlugin<CudaBackend>::api("0.1.0", nullptr, nullptr);

}  // namespace
}  // namespace tilepath::cuda

extern "C" TP_EXPORT const tp_backend_api* tilepath_backend_entry(uint32_t host_major, uint32_t host_minor) {
  (void)host_minor;  // minor versions only add fields at the end (struct_size tells)
  if (host_major != TILEPATH_ABI_MAJOR) return nullptr;
  return &tilepath::cuda::kApi;
}
