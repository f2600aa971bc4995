#pragma once
// Plugin-side helpers for backends written in C++ (header-only; the host never
// includes it): the storage a result points to until release_result, copying text
// into the ABI's fixed buffers, failing with a reason, and reading fields of a
// host struct that may be older (shorter) than this header's.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "backends/abi/tilepath_backend.h"

namespace tilepath::plugin {

// Copies text into a fixed ABI buffer, cut to fit, always NUL-terminated.
inline void copy_text(char* dst, std::size_t capacity, std::string_view text) {
  if (dst == nullptr || capacity == 0) return;
  const std::size_t n = text.size() < capacity - 1 ? text.size() : capacity - 1;
  text.copy(dst, n);
  dst[n] = '\0';
}
template <std::size_t N>
void copy_text(char (&dst)[N], std::string_view text) {
  copy_text(dst, N, text);
}

// Sets the result's status and message; returns the status (run_case returns it).
inline int finish(tp_result* out, int status, std::string_view message) {
  out->status = status;
  copy_text(out->message, message);
  return status;
}

// Why a device index is refused: the backend's device count and, where it has none, why.
inline std::string no_such_device(std::string_view backend, int device, std::size_t device_count,
                                  const std::string& no_device_reason) {
  return "device " + std::to_string(device) + " does not exist: the " + std::string(backend) + " backend has " +
         std::to_string(device_count) + " devices" + (no_device_reason.empty() ? "" : " (" + no_device_reason + ")");
}

// Thrown between the phases of a case when the host cancels it; run_case answers
// TP_ERR_CANCELLED.
class CaseCancelled : public std::runtime_error {
 public:
  CaseCancelled() : std::runtime_error("cancelled") {}
};

// Thrown when a case cannot run on the device (why: the field and what is allowed);
// run_case answers TP_ERR_UNSUPPORTED.
class UnsupportedCase : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reports a case's progress to the host and throws CaseCancelled where the host's cancel
// flag is set or its progress callback asks to stop; called between phases.
class PhaseReporter {
 public:
  explicit PhaseReporter(const tp_run_options& options) : options_(options) {}
  void operator()(double fraction, const char* phase) const {
    bool stop = options_.cancel && *options_.cancel != 0;
    if (options_.progress && options_.progress(options_.progress_user, fraction, phase) != 0) stop = true;
    if (stop) throw CaseCancelled();
  }

 private:
  const tp_run_options& options_;
};

// Whether a host struct of struct_size bytes has the field at [offset, offset + size).
inline bool covers(std::uint32_t struct_size, std::size_t offset, std::size_t size) {
  return struct_size >= offset + size;
}
#define TP_HAS_FIELD(ptr, type, field) \
  ((ptr) != nullptr && ::tilepath::plugin::covers((ptr)->struct_size, offsetof(type, field), sizeof(type::field)))

// Why the options' launch counts are refused ("" when they are fine): warmup outside
// 0..TP_MAX_LAUNCHES or repeats outside 0..TP_MAX_LAUNCHES (0 = the plugin's default).
inline std::string launch_count_problem(const tp_run_options* options) {
  if (options == nullptr) return "";
  auto check = [](const char* name, std::int32_t v) -> std::string {
    if (v >= 0 && v <= TP_MAX_LAUNCHES) return "";
    return std::string(name) + ": " + std::to_string(v) + " is out of range; allowed: 0.." +
           std::to_string(TP_MAX_LAUNCHES);
  };
  if (TP_HAS_FIELD(options, tp_run_options, warmup))
    if (std::string why = check("warmup", options->warmup); !why.empty()) return why;
  if (TP_HAS_FIELD(options, tp_run_options, repeats))
    if (std::string why = check("repeats", options->repeats); !why.empty()) return why;
  return "";
}

// Everything a tp_result points to (stage costs, metrics, artifacts), owned by the
// plugin from run_case until release_result. attach() hands it to the result through
// tp_result::plugin_owned; release() frees it. Not thread-safe by itself: the host
// serialises calls into a plugin.
class ResultStorage {
 public:
  void add_stage_cost(int32_t stage, int32_t method, double cost_us) {
    stage_costs_.push_back({stage, method, cost_us});
  }
  void add_metric(std::string_view name, double value, std::string_view unit) {
    tp_metric m{};
    copy_text(m.name, name);
    copy_text(m.unit, unit);
    m.value = value;
    metrics_.push_back(m);
  }
  void add_artifact(std::string_view name, std::string_view mime, std::string bytes) {
    tp_artifact a{};
    copy_text(a.name, name);
    copy_text(a.mime, mime);
    artifacts_.push_back(a);
    artifact_bytes_.push_back(std::make_unique<std::string>(std::move(bytes)));
  }
  const std::vector<tp_stage_cost>& stage_costs() const { return stage_costs_; }
  const std::vector<tp_metric>& metrics() const { return metrics_; }

  // Points out's lists at the storage and gives the result ownership of it.
  static void attach(tp_result& out, std::unique_ptr<ResultStorage> storage) {
    release(out);
    ResultStorage& s = *storage;
    for (std::size_t i = 0; i < s.artifacts_.size(); ++i) {
      s.artifacts_[i].data = reinterpret_cast<const std::uint8_t*>(s.artifact_bytes_[i]->data());
      s.artifacts_[i].size = s.artifact_bytes_[i]->size();
    }
    out.stage_costs = s.stage_costs_.empty() ? nullptr : s.stage_costs_.data();
    out.stage_cost_count = static_cast<int32_t>(s.stage_costs_.size());
    out.metrics = s.metrics_.empty() ? nullptr : s.metrics_.data();
    out.metric_count = static_cast<int32_t>(s.metrics_.size());
    out.artifacts = s.artifacts_.empty() ? nullptr : s.artifacts_.data();
    out.artifact_count = static_cast<int32_t>(s.artifacts_.size());
    out.plugin_owned = storage.release();
  }
  // Frees what attach gave the result; idempotent, and a no-op for a result without storage.
  static void release(tp_result& out) {
    delete static_cast<ResultStorage*>(out.plugin_owned);
    out.plugin_owned = nullptr;
    out.stage_costs = nullptr;
    out.stage_cost_count = 0;
    out.metrics = nullptr;
    out.metric_count = 0;
    out.artifacts = nullptr;
    out.artifact_count = 0;
  }

 private:
  std::vector<tp_stage_cost> stage_costs_;
  std::vector<tp_metric> metrics_;
  std::vector<tp_artifact> artifacts_;
  std::vector<std::unique_ptr<std::string>> artifact_bytes_;  // stable addresses
};

}  // namespace tilepath::plugin
