#pragma once
// A sweep whose cases run in `tilepath worker` processes (app/cli/worker_protocol.h), one
// per device: a plugin that crashes, calls exit() or hangs past the per-case timeout costs
// its worker, not the sweep. The case is tried once more on a fresh worker; a case that
// takes down two workers is stored as failed ("poison", listed in the outcome), so a
// resume skips it instead of crashing again.

#include <string>
#include <vector>

#include "core/sweep.h"

namespace tilepath::cli {

struct WorkerSweepOptions {
  std::string spec_path;  // the workers expand the same file
  std::int64_t max_cases = kDefaultMaxSweepCases;
  std::string db;
  std::vector<int> devices;  // one worker each
  double case_timeout_s = 1800;
  int shard = 0, shards = 1;  // run the cases whose index % shards == shard
  std::string command_line;
};

struct PoisonCase {
  int index = 0;
  std::string label, why;
};

struct WorkerSweepOutcome {
  SweepOutcome sweep;                 // total counts the shard's cases only
  std::vector<std::int64_t> run_ids;  // one run per device that ran a case
  std::vector<PoisonCase> poison;
  int worker_restarts = 0;
};

// Throws std::runtime_error when a worker cannot start (its stderr says why).
WorkerSweepOutcome run_sweep_in_workers(const SweepSpec& spec, const Backend& backend, RunStore& store,
                                        const WorkerSweepOptions& options, ProgressObserver* observer,
                                        const CancelFlag* cancel);

// The indices of a spec of `total` cases that shard I of N runs: those equal to I mod N.
std::vector<int> shard_indices(int total, int shard, int shards);

// "signal 11 (SIGSEGV)", "exit status 0": how a worker ended, from waitpid's status.
std::string describe_wait_status(int status);

}  // namespace tilepath::cli
