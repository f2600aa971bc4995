#pragma once
// Runs one case through a backend, turns the result into a CaseRecord (with the
// II-model prediction and overlap efficiency), and stores it.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/numerics/gate_metrics.h"
#include "core/operating_point.h"
#include "core/plugin_host.h"
#include "core/store/run_store.h"

namespace tilepath {

// Set from a signal handler or another thread to stop long work. Plugins read the
// same word through the ABI's `const volatile int32_t* cancel` (abi_cancel_flag):
// a lock-free std::atomic<int32_t> has exactly int32_t's size and representation.
using CancelFlag = std::atomic<std::int32_t>;
static_assert(CancelFlag::is_always_lock_free && sizeof(CancelFlag) == sizeof(std::int32_t));
inline const volatile std::int32_t* abi_cancel_flag(const CancelFlag* flag) {
  return reinterpret_cast<const volatile std::int32_t*>(flag);
}

// Long work reports through this (the GUI adapts it to signals).
class ProgressObserver {
 public:
  virtual ~ProgressObserver() = default;
  // overall fraction in [0,1]; label of what runs now
  virtual void progress(double fraction, const std::string& label) = 0;
  // a case finished and was stored (or skipped when already stored)
  virtual void case_done(const CaseRecord& rec, bool skipped) {
    (void)rec;
    (void)skipped;
  }
  virtual bool cancelled() const { return false; }
};

// The most warm-up or timed launches one case may ask for: far above any use (a sweep
// takes 20), and far below where counts of launches or samples could overflow.
inline constexpr int kMaxLaunches = TP_MAX_LAUNCHES;

struct RunSettings {
  int device = 0;
  int warmup = 5;           // 0..kMaxLaunches
  int repeats = 20;         // 1..kMaxLaunches
  bool stage_costs = true;  // ablations
  bool tile_interval = true;
  std::uint64_t seed = 0;  // 0 = fresh random seed per case
  // The inputs' keys (numerics::KeyDistribution names): the speed is the same, the
  // gate's error on the case's own inputs is not.
  std::string key_distribution = "gaussian";
  numerics::GateThresholds gate_thresholds;  // applied to the gate on the case's own inputs
  std::string gpu_model = "h200";            // for simulating backends
  std::string save_tensors_dir;
};

// RunSettings as JSON ({"device", "warmup", "repeats", "stage_costs", "tile_interval", "seed",
// "keys", "gate_thresholds", "gpu_model", "save_tensors_dir"}): how a worker process is told
// the settings of the case it runs (core/run/worker_protocol.h reads it back with the sweep
// spec's parse_run_settings and GateThresholds::from_json).
nlohmann::json to_json(const RunSettings& settings);

// Run one case and build the record (does not store). Status unsupported/failed is
// a record too. Cancellation: returns a record with status cancelled.
CaseRecord run_case(const Backend& backend, const OperatingPoint& op, const RunSettings& settings,
                    ProgressObserver* observer = nullptr, const CancelFlag* cancel = nullptr);

// "k8v8/fp8_qk/k_only B=64 S=4096 hbm_cold": how progress names a case.
std::string case_label(const OperatingPoint& op);

// The identity stored in cases.case_key.
std::string case_key(const OperatingPoint& op, const RunSettings& settings);

// Fill a RunInfo for this tool (version, git revision, host).
RunInfo make_run_info(const Backend& backend, int device, const std::string& command);
// As above, for a run with these settings: on a simulating backend (one whose
// devices are modelled GPUs) the device is the one settings.gpu_model selects,
// whatever settings.device says, so stored runs name the GPU that was modelled.
RunInfo make_run_info(const Backend& backend, const RunSettings& settings, const std::string& command);

}  // namespace tilepath
