#pragma once
// `tilepath run --profile`: the case's main kernel once more under Nsight Compute
// (`ncu --clock-control none --csv --page raw --print-units base`), in a child
// `tilepath run` of the same operating point, and what ncu measured attached to the
// stored case (core/perf/ncu_csv.h), the raw CSV kept as an artifact.

#include <string>

#include "core/store/run_store.h"

namespace tilepath::cli {

struct ProfileRequest {
  std::string backend;
  int device = 0;
  std::string keys;
  std::uint64_t seed = 0;
};

struct ProfileOutcome {
  bool ran = false;      // false: skipped, `why` says why (ncu not on PATH, not a cuda case, ...)
  std::string why;       // one line
  int measurements = 0;  // ncu_* values stored
  std::string artifact;  // name of the raw CSV stored with the case
};

// The ncu executable on PATH ("" when there is none).
std::string find_ncu();

// The ncu command line that profiles `op` (argv, ncu first): for tests and the log.
std::vector<std::string> ncu_command(const std::string& ncu, const std::string& tilepath, const OperatingPoint& op,
                                     const ProfileRequest& r, const std::string& scratch_db);

// Runs the profile of a stored case and annotates it in `store`. Throws std::runtime_error
// when ncu ran but its output cannot be used (the message names the file kept for it).
ProfileOutcome profile_case(RunStore& store, const CaseRecord& rec, const ProfileRequest& r);

}  // namespace tilepath::cli
