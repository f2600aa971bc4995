// `tilepath worker --backend NAME --device N --db FILE`: the process in which `tilepath
// sweep` and the GUI's Run panel run a plugin's cases (core/run/worker_protocol.h), so that a
// plugin that crashes, exits or hangs takes down this process, never the sweep or the GUI.
// Not meant to be run by hand: it reads requests on stdin and answers on file descriptor 3.

#include <cstdio>
#include <iostream>
#include <memory>

#include "app/cli/backend_choice.h"
#include "app/cli/cancel_signal.h"
#include "app/cli/command.h"
#include "core/run/worker_protocol.h"

namespace tilepath::cli {
namespace {

struct WorkerFlags {
  std::string backend, db;
  int device = 0;
};

void reply(const WorkerReply& r) {
  if (!write_all(kWorkerReplyFd, encode(r))) std::_Exit(kExitFailure);  // the sweep went away: nothing left to tell
}

class ReplyProgress final : public ProgressObserver {
 public:
  explicit ReplyProgress(int case_index) : case_index_(case_index) {}
  void progress(double fraction, const std::string& label) override {
    WorkerReply r;
    r.kind = WorkerReply::Kind::progress;
    r.case_index = case_index_;
    r.fraction = fraction;
    r.label = label;
    reply(r);
  }
  bool cancelled() const override { return cancel_flag().load() != 0; }

 private:
  int case_index_;
};

int run_worker(const WorkerFlags& f) {
  PluginHost host;
  host.discover();
  const Backend& backend = choose_backend(host, f.backend, f.device);
  RunStore store = RunStore::open(f.db);
  reply(WorkerReply{});  // ready

  std::string line;
  while (std::getline(std::cin, line)) {
    WorkerRequest request = decode_request(line);
    request.settings.device = f.device;  // the device this worker's backend was chosen for
    const OperatingPoint& op = request.op;
    const RunInfo info = make_run_info(backend, request.settings, "");
    WorkerReply done;
    done.kind = WorkerReply::Kind::done;
    done.case_index = request.case_index;
    const std::string key = case_key(op, request.settings);
    if (key != request.key) {
      done.status = "error";
      done.message = "worker: the case sent as " + request.key + " reads back as " + key;
      reply(done);
      continue;
    }
    // Another process may have stored it meanwhile, or be running it now.
    const RunStore::Claim claim = store.claim_case(info.backend, info.device, key);
    if (claim.outcome != RunStore::ClaimOutcome::claimed) {
      done.status = "skipped";
      if (claim.outcome == RunStore::ClaimOutcome::claimed_by_other) done.message = "claimed by " + claim.owner;
      reply(done);
      continue;
    }
    ReplyProgress progress(request.case_index);
    CaseRecord rec = run_case(backend, op, request.settings, &progress, &cancel_flag());
    if (rec.status == CaseStatus::cancelled) {
      store.release_claim(info.backend, info.device, key);
      WorkerReply cancelled;
      cancelled.kind = WorkerReply::Kind::cancelled;
      cancelled.case_index = request.case_index;
      reply(cancelled);
      return kExitCancelled;
    }
    done.case_id = store.add_case_unless_stored(request.run_id, rec);
    done.stored = done.case_id != 0;
    done.status = std::string(to_string(rec.status));
    done.message = rec.message;
    done.latency_us = rec.measurement("latency_us");
    done.retire = rec.status == CaseStatus::error;
    reply(done);
    if (done.retire) return kExitOk;  // the sweep starts a fresh worker for the next case
  }
  return kExitOk;
}

}  // namespace

Command add_worker_command(CLI::App& app) {
  auto f = std::make_shared<WorkerFlags>();
  CLI::App* sub = app.add_subcommand("worker", "The process a sweep runs its plugin cases in (internal)");
  sub->group("");  // not listed in --help: `tilepath sweep` and tilepath-gui start it
  sub->add_option("--backend", f->backend, "backend plugin")->required();
  sub->add_option("--device", f->device, "device index")->required();
  sub->add_option("--db", f->db, "SQLite run database")->required();
  return {sub, [f](const CliContext&) { return run_worker(*f); }};
}

}  // namespace tilepath::cli
