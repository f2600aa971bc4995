// The HIP backend plugin (AMD CDNA 3, gfx942): the one exported entry symbol and the ABI
// functions (backends/abi/tilepath_backend.h). Everything below the boundary may throw;
// nothing crosses it: HIP failures become TP_ERR_RUNTIME naming the call and the error.

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "backends/abi/tilepath_backend.h"
#include "backends/abi/tilepath_plugin.h"
#include "backends/abi/tilepath_plugin_gate.h"
#include "backends/hip/device_enumeration.h"
#include "backends/hip/device_session.h"
#include "backends/hip/hip_check.h"
#include "backends/hip/kernel_records.h"
#include "core/operating_point.h"

namespace tilepath::hip {
namespace {

struct PluginState {
  std::mutex mutex;  // the host serialises calls; this also covers stray concurrent use
  bool initialised = false;
  DeviceSurvey survey;
  std::map<int, std::unique_ptr<DeviceSession>> sessions;
};

PluginState& state() {
  static PluginState s;
  return s;
}

std::string no_such_device(const PluginState& s, int device) {
  return plugin::no_such_device("hip", device, s.survey.devices.size(), s.survey.no_device_reason);
}

int plugin_init(char* error, std::size_t error_len) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.initialised) {
    s.survey = survey_devices();  // a missing driver or GPU is not an error
    s.initialised = true;
  }
  plugin::copy_text(error, error_len, "");
  return 0;
}

void plugin_shutdown() {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  s.sessions.clear();
  s.initialised = false;
}

int32_t plugin_device_count() {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  return int32_t(s.survey.devices.size());
}

const char* plugin_no_device_reason() {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  return s.initialised ? s.survey.no_device_reason.c_str() : "the hip plugin was not initialised (call init first)";
}

int plugin_device_info(int32_t device, tp_device_info* out) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (!out || device < 0 || device >= int32_t(s.survey.devices.size())) return 1;
  // Copy no more than the host's struct holds (an older host has a shorter one).
  const uint32_t host_size = out->struct_size ? out->struct_size : uint32_t(sizeof(tp_device_info));
  const std::size_t n = std::min<std::size_t>(host_size, sizeof(tp_device_info));
  std::memcpy(out, &s.survey.devices[device], n);
  out->struct_size = uint32_t(n);
  return 0;
}

int plugin_supports(int32_t device, const tp_case* c, char* why, std::size_t why_len) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (device < 0 || device >= int32_t(s.survey.devices.size())) {
    plugin::copy_text(why, why_len, no_such_device(s, device));
    return 0;
  }
  try {
    std::string reason = unsupported_reason(from_tp_case(*c));
    const std::string arch = s.survey.devices[device].arch;
    if (reason.empty() && arch.rfind(kKernelArch, 0) != 0)
      reason = "device " + std::to_string(device) + " is " + arch + "; the HIP kernels are built for gfx942 only";
    plugin::copy_text(why, why_len, reason);
    return reason.empty() ? 1 : 0;
  } catch (const std::exception& e) {
    plugin::copy_text(why, why_len, e.what());
    return 0;
  }
}

int plugin_run_case(int32_t device, const tp_case* c, const tp_run_options* options, tp_result* out) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (!out) return TP_ERR_INVALID;
  if (!c || !options) return plugin::finish(out, TP_ERR_INVALID, "run_case: case and options must not be NULL");
  if (device < 0 || device >= int32_t(s.survey.devices.size()))
    return plugin::finish(out, TP_ERR_UNSUPPORTED, no_such_device(s, device));
  OperatingPoint op;
  try {
    op = from_tp_case(*c);
    op.validate();
  } catch (const std::exception& e) {
    return plugin::finish(out, TP_ERR_INVALID, e.what());
  }
  if (std::string why; !plugin::key_distribution(options, &why)) return plugin::finish(out, TP_ERR_INVALID, why);
  if (const std::string why = plugin::launch_count_problem(options); !why.empty())
    return plugin::finish(out, TP_ERR_INVALID, why);
  auto storage = std::make_unique<plugin::ResultStorage>();
  try {
    auto& session = s.sessions[device];
    if (!session) session = std::make_unique<DeviceSession>(device);
    session->run(op, *options, *out, *storage);
  } catch (const UnsupportedCase& e) {
    return plugin::finish(out, TP_ERR_UNSUPPORTED, e.what());
  } catch (const plugin::CaseCancelled&) {
    return plugin::finish(out, TP_ERR_CANCELLED, "cancelled");
  } catch (const HipCallError& e) {
    s.sessions.erase(device);  // a failed call may leave the stream unusable: start afresh
    return plugin::finish(out, TP_ERR_RUNTIME, e.what());
  } catch (const std::exception& e) {
    return plugin::finish(out, TP_ERR_RUNTIME, e.what());
  }
  plugin::ResultStorage::attach(*out, std::move(storage));
  return out->status;
}

void plugin_release_result(tp_result* r) {
  if (r) plugin::ResultStorage::release(*r);
}

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

const tp_backend_api kApi = {
    sizeof(tp_backend_api),
    TILEPATH_ABI_MAJOR,
    TILEPATH_ABI_MINOR,
    "hip",
    "0.1.0",
    plugin_init,
    plugin_shutdown,
    plugin_device_count,
    plugin_no_device_reason,
    plugin_device_info,
    plugin_supports,
    plugin_run_case,
    plugin_release_result,
    plugin_kernel_count,
    plugin_kernel_record,
};

}  // namespace
}  // namespace tilepath::hip

extern "C" TP_EXPORT const tp_backend_api* tilepath_backend_entry(uint32_t host_major, uint32_t host_minor) {
  (void)host_minor;  // minor versions only add fields at the end (struct_size tells)
  if (host_major != TILEPATH_ABI_MAJOR) return nullptr;
  return &tilepath::hip::kApi;
}
