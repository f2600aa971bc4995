// The HIP backend plugin (AMD CDNA 3, gfx942): the one exported entry symbol and the ABI
// functions (backends/common/device_plugin.h over this folder's device survey and sessions),
// and the list of its kernels. HIP failures become TP_ERR_RUNTIME naming the call and the error.

#include <algorithm>
#include <cstring>
#include <string>

#include "backends/common/device_plugin.h"
#include "backends/hip/device_enumeration.h"
#include "backends/hip/device_session.h"
#include "backends/hip/hip_check.h"
#include "backends/hip/kernel_records.h"

namespace tilepath::hip {
namespace {

struct HipBackend {
  static constexpr const char* kName = "hip";
  using Survey = DeviceSurvey;
  using Session = DeviceSession;
  using CallError = HipCallError;  // a failed call may leave the stream unusable
  static Survey survey() { return survey_devices(); }
  static std::string unsupported_reason(const OperatingPoint& op, const tp_device_info& info, int device) {
    const std::string reason = hip::unsupported_reason(op);
    const std::string arch = info.arch;
    if (reason.empty() && arch.rfind(kKernelArch, 0) != 0)
      return "device " + std::to_string(device) + " is " + arch + "; the HIP kernels are built for gfx942 only";
    return reason;
  }
};

int32_t plugin_kernel_count() { return int32_t(kernel_records().size()); }

int plugin_kernel_record(int32_t index, tp_kernel_record* out) {
  const auto& records = kernel_records();
  if (!out || index < 0 || index >= int32_t(records.size())) return 1;
  const KernelRecord& r = records[index];
  tp_kernel_record k{};
  k.struct_size = sizeof k;
  plugin::copy_text(k.name, r.name);
  plugin::copy_text(k.symbol, r.symbol);
  plugin::copy_text(k.binary_sha256, r.code_object_sha256);
  k.registers = r.vgprs < 0 ? -1 : r.vgprs + r.agprs;
  k.accum_registers = r.agprs;
  k.shared_bytes = r.lds_bytes;
  k.scratch_bytes = r.scratch_bytes;
  k.threads = r.threads;
  k.waves_per_simd = r.waves_per_simd;
  k.target_waves_per_simd = r.target_waves_per_simd;
  // Copy no more than the host's struct holds (an older host has a shorter one).
  const std::size_t n = std::min<std::size_t>(out->struct_size ? out->struct_size : sizeof k, sizeof k);
  std::memcpy(out, &k, n);
  out->struct_size = uint32_t(n);
  return 0;
}

constexpr tp_backend_api kApi =
    plugin::DevicePlugin<HipBackend>::api("0.1.0", plugin_kernel_count, plugin_kernel_record);

}  // namespace
}  // namespace tilepath::hip

extern "C" TP_EXPORT const tp_backend_api* tilepath_backend_entry(uint32_t host_major, uint32_t host_minor) {
  (void)host_minor;  // minor versions only add fields at the end (struct_size tells)
  if (host_major != TILEPATH_ABI_MAJOR) return nullptr;
  return &tilepath::hip::kApi;
}
