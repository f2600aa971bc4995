#pragma once
// Cartesian sweep specs (docs/sweep-spec.md) and their resumable execution.

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/case_runner.h"

namespace tilepath {

struct SweepSpec {
  std::string name;
  std::string backend;  // default backend (CLI --backend overrides)
  RunSettings settings;
  std::vector<OperatingPoint> cases;  // expanded, valid combinations only
  int skipped_invalid = 0;            // combinations dropped as invalid (e.g. k16 path with k8v8)
  std::string first_invalid;          // why the first dropped combination is invalid ("mode: ...")
};

// The most combinations a spec may expand to unless the caller allows more: the product
// of the axes is counted before anything is expanded, so a small file cannot ask for
// millions of cases (and gigabytes) by accident.
inline constexpr std::int64_t kDefaultMaxSweepCases = 100000;

// A spec's "settings" object into settings, starting from what settings holds: every key
// but gate_thresholds (to_json(RunSettings) writes them all). Throws ValidationError naming
// "settings.KEY" and the allowed values.
void parse_run_settings(const nlohmann::json& s, RunSettings& settings);

// Throws ValidationError naming the JSON path of the bad field ("axes.batch[2]: ...");
// "axes" with the count when the axes' product exceeds max_cases.
SweepSpec parse_sweep_spec(const nlohmann::json& j, std::int64_t max_cases = kDefaultMaxSweepCases);
SweepSpec load_sweep_spec(const std::string& path, std::int64_t max_cases = kDefaultMaxSweepCases);

// "case 3/840 k8v8/fp8_qk/k_only B=64 S=4096 hbm_cold": how progress names a sweep's case.
std::string sweep_case_label(const OperatingPoint& op, int index, int total);

struct SweepOutcome {
  int total = 0, ran = 0, skipped_existing = 0, failed = 0, unsupported = 0;
  bool cancelled = false;
  std::int64_t run_id = 0;
};

// How many of the spec's cases the store has no result for (RunStore::has_case, same
// backend, device and key): what run_sweep would run.
int sweep_cases_to_run(const SweepSpec& spec, const Backend& backend, const RunStore& store);

// Runs every case not already in the store (same backend, device, key); one
// commit per finished case. Stops cleanly between cases when cancel is set. The store
// is written only when a case runs: with nothing to run it may be read-only.
SweepOutcome run_sweep(const SweepSpec& spec, const Backend& backend, RunStore& store, const std::string& command,
                       ProgressObserver* observer = nullptr, const CancelFlag* cancel = nullptr);

}  // namespace tilepath
