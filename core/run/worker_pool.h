#pragma once
// A sweep whose cases run in `tilepath worker` processes (core/run/worker_protocol.h), one
// per device: a plugin that crashes, calls exit() or hangs past the per-case timeout costs
// its worker, not the process that runs the sweep (`tilepath sweep`, or the GUI). The case
// is tried once more on a fresh worker; a case that takes down two workers is stored as
// failed ("poison", listed in the outcome), so a resume skips it instead of crashing again.

#include <string>
#include <vector>

#include "core/sweep.h"

namespace tilepath {

struct WorkerSweepOptions {
  std::string worker_program;  // the `tilepath` executable whose `worker` subcommand runs the cases
  std::string db;              // the workers open it themselves and store the cases they run
  std::vector<int> devices;    // one worker each
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

// Runs every case of the shard that the store has no result for. Cancel (the flag or the
// observer) interrupts the cases in flight; one that does not stop within 10 s (or the case
// timeout, if shorter) is abandoned with its worker. Finished cases are stored whatever ends
// the sweep. A worker whose case ended in a runtime error ends after its reply (the device may
// be unusable in its process) and a fresh one takes the next case. Throws std::runtime_error
// when worker_program is not an executable file or a worker cannot start (its stderr says why).
WorkerSweepOutcome run_sweep_in_workers(const SweepSpec& spec, const Backend& backend, RunStore& store,
                                        const WorkerSweepOptions& options, ProgressObserver* observer,
                                        const CancelFlag* cancel);

// The indices of a spec of `total` cases that shard I of N runs: those equal to I mod N.
std::vector<int> shard_indices(int total, int shard, int shards);

// "signal 11 (SIGSEGV)", "exit status 0": how a worker ended, from waitpid's status.
std::string describe_wait_status(int status);

// The running program's own path (/proc/self/exe). Throws std::runtime_error saying why not.
std::string running_program_path();

}  // namespace tilepath
