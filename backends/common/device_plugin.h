#pragma once
// The ABI functions (backends/abi/tilepath_backend.h) of a GPU backend plugin, over its
// device survey and one device session per device: what the cuda and hip plugins share.
// Everything below the boundary may throw; nothing crosses it: a case that cannot run is
// TP_ERR_UNSUPPORTED, a bad case or option TP_ERR_INVALID with the field, a cancel
// TP_ERR_CANCELLED, any other failure TP_ERR_RUNTIME with its message.
//
// B, the backend, names its parts:
//   kName             "cuda", "hip": the ABI's name and the messages'
//   Survey            devices (std::vector<tp_device_info>) and no_device_reason ("" with devices)
//   Session           Session(int device); run(op, options, result, storage) measures one case;
//                     it throws UnsupportedCase for a case the device cannot run and
//                     CaseCancelled when the host cancels (backends/abi/tilepath_plugin.h)
//   CallError         what a failed runtime call throws: the device's session is dropped, as
//                     the error may have poisoned its context or stream, so the next case
//                     starts from a fresh one
//   survey()          the devices; never throws (no driver or GPU: none, with the reason)
//   unsupported_reason(op, device_info, device)   "" when the device can run op, else why not

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "backends/abi/tilepath_backend.h"
#include "backends/abi/tilepath_plugin.h"
#include "backends/abi/tilepath_plugin_gate.h"
#include "core/operating_point.h"

namespace tilepath::plugin {

template <class B>
class DevicePlugin {
 public:
  // The ABI's table; kernel_count and kernel_record may be null (then the kernel records
  // come with each case's result).
  static constexpr tp_backend_api api(const char* version, int32_t (*kernel_count)(),
                                      int (*kernel_record)(int32_t, tp_kernel_record*)) {
    return {sizeof(tp_backend_api),
            TILEPATH_ABI_MAJOR,
            TILEPATH_ABI_MINOR,
            B::kName,
            version,
            init,
            shutdown,
            device_count,
            no_device_reason,
            device_info,
            supports,
            run_case,
            release_result,
            kernel_count,
            kernel_record};
  }

 private:
  struct State {
    std::mutex mutex;  // the host serialises calls; this also covers stray concurrent use
    bool initialised = false;
    typename B::Survey survey;
    std::map<int, std::unique_ptr<typename B::Session>> sessions;
    bool has(int device) const { return device >= 0 && device < int(survey.devices.size()); }
    std::string no_such(int device) const {
      return plugin::no_such_device(B::kName, device, survey.devices.size(), survey.no_device_reason);
    }
  };

  static State& state() {
    static State s;
    return s;
  }

  static int init(char* error, std::size_t error_len) {
    auto& s = state();
    std::lock_guard lock(s.mutex);
    if (!s.initialised) {
      s.survey = B::survey();  // a missing driver or GPU is not an error
      s.initialised = true;
    }
    copy_text(error, error_len, "");
    return 0;
  }

  static void shutdown() {
    auto& s = state();
    std::lock_guard lock(s.mutex);
    s.sessions.clear();
    s.initialised = false;
  }

  static int32_t device_count() {
    auto& s = state();
    std::lock_guard lock(s.mutex);
    return int32_t(s.survey.devices.size());
  }

  static const char* no_device_reason() {
    static const std::string not_initialised =
        std::string("the ") + B::kName + " plugin was not initialised (call init first)";
    auto& s = state();
    std::lock_guard lock(s.mutex);
    return s.initialised ? s.survey.no_device_reason.c_str() : not_initialised.c_str();
  }

  static int device_info(int32_t device, tp_device_info* out) {
    auto& s = state();
    std::lock_guard lock(s.mutex);
    if (!out || !s.has(device)) return 1;
    // Copy no more than the host's struct holds (an older host has a shorter one).
    const std::size_t host_size = out->struct_size ? out->struct_size : sizeof(tp_device_info);
    const std::size_t n = std::min(host_size, sizeof(tp_device_info));
    std::memcpy(out, &s.survey.devices[device], n);
    out->struct_size = uint32_t(n);
    return 0;
  }

  static int supports(int32_t device, const tp_case* c, char* why, std::size_t why_len) {
    auto& s = state();
    std::lock_guard lock(s.mutex);
    if (!s.has(device)) {
      copy_text(why, why_len, s.no_such(device));
      return 0;
    }
    try {
      const std::string reason = B::unsupported_reason(from_tp_case(*c), s.survey.devices[device], device);
      copy_text(why, why_len, reason);
      return reason.empty() ? 1 : 0;
    } catch (const std::exception& e) {
      copy_text(why, why_len, e.what());
      return 0;
    }
  }

  static int run_case(int32_t device, const tp_case* c, const tp_run_options* options, tp_result* out) {
    auto& s = state();
    std::lock_guard lock(s.mutex);
    if (!out) return TP_ERR_INVALID;
    if (!c || !options) return finish(out, TP_ERR_INVALID, "run_case: case and options must not be NULL");
    if (!s.has(device)) return finish(out, TP_ERR_UNSUPPORTED, s.no_such(device));
    OperatingPoint op;
    try {
      op = from_tp_case(*c);
      op.validate();
    } catch (const std::exception& e) {
      return finish(out, TP_ERR_INVALID, e.what());
    }
    if (std::string why; !key_distribution(options, &why)) return finish(out, TP_ERR_INVALID, why);
    if (const std::string why = launch_count_problem(options); !why.empty()) return finish(out, TP_ERR_INVALID, why);
    auto storage = std::make_unique<ResultStorage>();
    try {
      auto& session = s.sessions[device];
      if (!session) session = std::make_unique<typename B::Session>(device);
      session->run(op, *options, *out, *storage);
    } catch (const UnsupportedCase& e) {
      return finish(out, TP_ERR_UNSUPPORTED, e.what());
    } catch (const CaseCancelled&) {
      return finish(out, TP_ERR_CANCELLED, "cancelled");
    } catch (const typename B::CallError& e) {
      s.sessions.erase(device);
      return finish(out, TP_ERR_RUNTIME, e.what());
    } catch (const std::exception& e) {
      return finish(out, TP_ERR_RUNTIME, e.what());
    }
    ResultStorage::attach(*out, std::move(storage));
    return out->status;
  }

  static void release_result(tp_result* r) {
    if (r) ResultStorage::release(*r);
  }
};

}  // namespace tilepath::plugin
