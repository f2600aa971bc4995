#include "core/run/worker_pool.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>

#include "core/run/worker_protocol.h"

namespace tilepath {
namespace {

using Clock = std::chrono::steady_clock;

// write_all to a worker's stdin with SIGPIPE blocked in this thread: a worker that died
// since its last reply must read as a failed write (EPIPE), not end the sweep's process
// (the GUI's too) by the signal's default action. A SIGPIPE raised meanwhile is consumed
// before the mask is restored.
bool write_to_worker(int fd, const std::string& line) {
  sigset_t pipe_only, previous;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &previous);
  const bool ok = write_all(fd, line);
  if (!ok && errno == EPIPE) {
    const timespec now{0, 0};
    while (sigtimedwait(&pipe_only, nullptr, &now) == SIGPIPE) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return ok;
}

// One `tilepath worker` child: requests on its stdin, replies read from its fd 3.
class WorkerProcess {
 public:
  explicit WorkerProcess(const std::vector<std::string>& argv) {
    // Built before fork: the child of a multi-threaded process (the GUI) may call only
    // async-signal-safe functions until it execs, and malloc is not one.
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    int request[2], replies[2];
    if (pipe2(request, O_CLOEXEC) != 0 || pipe2(replies, O_CLOEXEC) != 0)
      throw std::runtime_error(std::string("cannot create a worker's pipes: ") + std::strerror(errno));
    const pid_t sweep = getpid();
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error(std::string("cannot start a worker: ") + std::strerror(errno));
    if (pid_ == 0) {
      // Its own process group: a terminal's Ctrl-C reaches the sweep, which passes it on once.
      setpgid(0, 0);
      // A sweep that is killed takes its workers with it: no orphan goes on holding claims.
      // (The signal follows the thread that forked: the sweep's loop, which outlives its workers.)
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != sweep) _exit(1);
      dup2(request[0], STDIN_FILENO);
      dup2(replies[1], kWorkerReplyFd);
      dup2(STDERR_FILENO, STDOUT_FILENO);  // what a plugin prints must not reach the sweep's stdout
      for (int fd : {STDIN_FILENO, STDOUT_FILENO, kWorkerReplyFd}) fcntl(fd, F_SETFD, 0);
      // The mask survives exec: a thread of the GUI may block what the worker must receive.
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(request[0]);
    close(replies[1]);
    to_ = request[1];
    from_ = replies[0];
    fcntl(from_, F_SETFL, fcntl(from_, F_GETFL) | O_NONBLOCK);
  }
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;
  ~WorkerProcess() {
    close_input();
    if (from_ >= 0) close(from_);
    if (!reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  int reply_fd() const { return from_; }
  pid_t pid() const { return pid_; }

  bool send(const std::string& line) { return write_to_worker(to_, line); }
  void close_input() {
    if (to_ >= 0) close(to_);
    to_ = -1;
  }

  // Complete lines read so far; eof once the worker closed its end (it ended).
  std::vector<std::string> read_lines(bool& eof) {
    char chunk[4096];
    for (;;) {
      const ssize_t n = read(from_, chunk, sizeof chunk);
      if (n > 0) {
        pending_.append(chunk, static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0) eof = true;
      if (n < 0 && errno == EINTR) continue;
      break;  // EAGAIN: nothing more now
    }
    std::vector<std::string> lines;
    for (std::size_t nl; (nl = pending_.find('\n')) != std::string::npos; pending_.erase(0, nl + 1))
      lines.push_back(pending_.substr(0, nl));
    return lines;
  }

  void interrupt() { kill(pid_, SIGINT); }

  // How it ended; a worker that closed its replies but lives on is killed after a grace period.
  std::string wait_for_exit(bool kill_first = false) {
    if (kill_first) kill(pid_, SIGKILL);
    int status = 0;
    const auto give_up = Clock::now() + std::chrono::seconds(5);
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (Clock::now() > give_up) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    reaped_ = true;
    return describe_wait_status(status);
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  bool reaped_ = false;
  std::string pending_;
};

struct Slot {
  int device = 0;
  std::unique_ptr<WorkerProcess> process;
  bool ready = false;
  int busy = -1;  // the case index in flight
  Clock::time_point started;
  std::int64_t run_id = 0;
  int failed_starts = 0;
  bool retiring = false;  // its last reply said it ends: a fresh worker takes over
};

}  // namespace

std::vector<int> shard_indices(int total, int shard, int shards) {
  std::vector<int> out;
  for (int i = shard; i < total; i += shards) out.push_back(i);
  return out;
}

std::string running_program_path() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) throw std::runtime_error(std::string("cannot find this program's path: ") + std::strerror(errno));
  path[n] = '\0';
  return path;
}

std::string describe_wait_status(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    return "signal " + std::to_string(sig) + (name ? std::string(" (SIG") + name + ")" : std::string());
  }
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  return "wait status " + std::to_string(status);
}

WorkerSweepOutcome run_sweep_in_workers(const SweepSpec& spec, const Backend& backend, RunStore& store,
                                        const WorkerSweepOptions& o, ProgressObserver* observer,
                                        const CancelFlag* cancel) {
  if (o.devices.empty()) throw std::invalid_argument("run_sweep_in_workers: no device");
  if (o.shards < 1 || o.shard < 0 || o.shard >= o.shards) throw std::invalid_argument("run_sweep_in_workers: shard");
  WorkerSweepOutcome out;
  SweepOutcome& outcome = out.sweep;
  const int spec_total = static_cast<int>(spec.cases.size());
  const std::vector<int> mine = shard_indices(spec_total, o.shard, o.shards);
  outcome.total = static_cast<int>(mine.size());

  const RunInfo identity = make_run_info(backend, spec.settings, "");
  const auto key_of = [&](int i) { return case_key(spec.cases[static_cast<std::size_t>(i)], spec.settings); };
  const auto label_of = [&](int i) { return sweep_case_label(spec.cases[static_cast<std::size_t>(i)], i, spec_total); };
  int finished = 0;
  // stored_id: the case a worker stored, read back so that the observer sees the whole
  // record (measurements, gate rows) as an in-process sweep passes it.
  const auto report_done = [&](int i, CaseStatus status, const std::string& message, std::optional<double> latency,
                               bool skipped, std::int64_t stored_id = 0) {
    ++finished;
    if (observer == nullptr) return;
    // The bar prints "case i/n" itself before the label of a finished case.
    observer->progress(outcome.total > 0 ? double(finished) / outcome.total : 1.0,
                       case_label(spec.cases[static_cast<std::size_t>(i)]));
    CaseRecord rec;
    bool loaded = false;
    if (stored_id > 0) {
      try {
        rec = store.load_case(stored_id);
        loaded = true;
      } catch (const std::exception&) {
        // reported from the reply alone below; the case is stored either way
      }
    }
    if (!loaded) {
      rec.op = spec.cases[static_cast<std::size_t>(i)];
      rec.case_key = key_of(i);
      rec.status = status;
      rec.message = message;
      if (latency) rec.measurements.push_back({"latency_us", *latency, "us"});
    }
    observer->case_done(rec, skipped);
  };

  std::deque<int> pending;
  for (int i : mine) {
    if (store.has_case(identity.backend, identity.device, key_of(i))) {
      ++outcome.skipped_existing;
      report_done(i, CaseStatus::ok, "", std::nullopt, true);
    } else {
      pending.push_back(i);
    }
  }
  if (pending.empty()) return out;

  const std::string& exe = o.worker_program;
  struct stat st {};
  if (exe.empty() || stat(exe.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || access(exe.c_str(), X_OK) != 0)
    throw std::runtime_error("cannot run plugin cases in worker processes: " +
                             (exe.empty() ? std::string("no worker program given")
                                          : exe + " is not an executable file (the `tilepath` CLI)"));
  const auto spawn = [&](Slot& s) {
    s.process = std::make_unique<WorkerProcess>(std::vector<std::string>{
        exe, "worker", "--backend", backend.name(), "--device", std::to_string(s.device), "--db", o.db});
    s.ready = false;
    s.busy = -1;
    s.retiring = false;
  };
  std::vector<Slot> slots(o.devices.size());
  for (std::size_t k = 0; k < slots.size(); ++k) {
    slots[k].device = o.devices[k];
    spawn(slots[k]);
  }
  std::vector<std::int64_t> begun;  // runs begun here, each finished however the loop ends
  const auto run_for = [&](Slot& s) {
    if (s.run_id == 0) {
      RunSettings settings = spec.settings;
      settings.device = s.device;
      RunInfo info = make_run_info(backend, settings, o.command_line);
      info.notes = "sweep " + spec.name + (o.devices.size() > 1 ? ", device " + std::to_string(s.device) : "") +
                   (o.shards > 1 ? ", shard " + std::to_string(o.shard) + "/" + std::to_string(o.shards) : "");
      s.run_id = store.begin_run(info);
      begun.push_back(s.run_id);
    }
    return s.run_id;
  };

  // A worker that cannot start ends the sweep with an exception: its runs are finished too.
  struct FinishRuns {
    RunStore& store;
    const std::vector<std::int64_t>& ids;
    ~FinishRuns() {
      for (std::int64_t id : ids) {
        try {
          store.finish_run(id);
        } catch (const std::exception&) {
          // the error that ended the sweep is the one to report
        }
      }
    }
  } finish_runs{store, begun};
  std::map<int, std::vector<std::string>> deaths;  // case -> how the workers running it ended
  bool stopping = false;
  Clock::time_point stop_started;
  // After a cancel, a case that does not stop within this is abandoned with its worker.
  const auto stop_grace = std::chrono::duration<double>(std::min(o.case_timeout_s, 10.0));
  const auto stop_requested = [&] {
    return (cancel != nullptr && cancel->load()) || (observer != nullptr && observer->cancelled());
  };
  // A worker ended: the case in flight is retried once, then stored as failed (poison).
  const auto worker_died = [&](Slot& s, const std::string& how) {
    const int i = s.busy;
    s.process.reset();
    s.ready = false;
    s.busy = -1;
    if (i < 0) {
      if (++s.failed_starts >= 2 && !stopping)
        throw std::runtime_error("the " + backend.name() + " worker for device " + std::to_string(s.device) +
                                 " ended before it was ready (" + how + "), twice; its messages are on stderr");
    } else {
      s.failed_starts = 0;
      std::vector<std::string>& d = deaths[i];
      d.push_back(how);
      if (d.size() >= 2) {
        CaseRecord rec;
        rec.op = spec.cases[static_cast<std::size_t>(i)];
        rec.case_key = key_of(i);
        rec.status = CaseStatus::failed;
        rec.message = "poison: the " + backend.name() + " plugin's worker ended twice while running this case (" +
                      d[0] + "; " + d[1] + "); a resume skips it";
        if (store.add_case_unless_stored(run_for(s), rec) != 0) {
          ++outcome.ran;
          ++outcome.failed;
        }
        out.poison.push_back({i, label_of(i), rec.message});
        report_done(i, CaseStatus::failed, rec.message, std::nullopt, false);
      } else if (!stopping) {
        pending.push_front(i);
      }
    }
    if (!stopping) {
      ++out.worker_restarts;
      spawn(s);
    }
  };

  for (;;) {
    if (!stopping && stop_requested()) {
      stopping = true;
      stop_started = Clock::now();
      outcome.cancelled = true;
      for (Slot& s : slots) {
        if (!s.process) continue;
        if (s.busy >= 0) {
          s.process->interrupt();
        } else {
          s.process->close_input();
        }
      }
    }
    // Hand out cases to ready, idle workers.
    for (Slot& s : slots) {
      if (stopping || pending.empty() || !s.process || !s.ready || s.busy >= 0) continue;
      const int i = pending.front();
      pending.pop_front();
      RunSettings settings = spec.settings;
      settings.device = s.device;
      const WorkerRequest request{i, key_of(i), run_for(s), spec.cases[static_cast<std::size_t>(i)], settings};
      s.busy = i;
      s.started = Clock::now();
      if (observer != nullptr)
        observer->progress(outcome.total > 0 ? double(finished) / outcome.total : 1.0, label_of(i));
      if (!s.process->send(encode(request))) worker_died(s, s.process->wait_for_exit());
    }
    const bool any_busy = std::any_of(slots.begin(), slots.end(), [](const Slot& s) { return s.busy >= 0; });
    const bool any_starting =
        std::any_of(slots.begin(), slots.end(), [](const Slot& s) { return s.process && !s.ready; });
    if (!any_busy && (stopping || pending.empty())) break;
    if (!any_busy && !any_starting) break;  // no worker left to run anything

    std::vector<pollfd> fds;
    std::vector<Slot*> polled;
    for (Slot& s : slots)
      if (s.process) {
        fds.push_back({s.process->reply_fd(), POLLIN, 0});
        polled.push_back(&s);
      }
    poll(fds.data(), fds.size(), 200);  // a tick to look at the cancel flag and the timeouts
    for (std::size_t k = 0; k < fds.size(); ++k) {
      Slot& s = *polled[k];
      if (!s.process) continue;
      bool eof = false;
      if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        for (const std::string& line : s.process->read_lines(eof)) {
          const WorkerReply r = decode_reply(line);
          if (r.kind == WorkerReply::Kind::ready) {
            s.ready = true;
          } else if (r.kind == WorkerReply::Kind::progress && r.case_index == s.busy && observer != nullptr) {
            observer->progress(outcome.total > 0 ? (finished + std::clamp(r.fraction, 0.0, 1.0)) / outcome.total : 1.0,
                               r.label.empty() ? label_of(s.busy) : r.label);
          } else if (r.kind == WorkerReply::Kind::done && r.case_index == s.busy) {
            const CaseStatus status = r.status == "skipped" ? CaseStatus::ok : parse_case_status(r.status);
            if (r.status == "skipped" || !r.stored) {
              ++outcome.skipped_existing;
              report_done(s.busy, status, r.message, r.latency_us, true);
            } else {
              ++outcome.ran;
              if (status == CaseStatus::failed || status == CaseStatus::error) ++outcome.failed;
              if (status == CaseStatus::unsupported) ++outcome.unsupported;
              report_done(s.busy, status, r.message, r.latency_us, false, r.case_id);
            }
            s.busy = -1;
            s.retiring = r.retire;
            if (stopping) s.process->close_input();
          } else if (r.kind == WorkerReply::Kind::cancelled && r.case_index == s.busy) {
            outcome.cancelled = true;
            if (!stopping) stop_started = Clock::now();
            stopping = true;
            s.busy = -1;  // abandoned, never stored half-measured
          }
        }
      }
      if (eof) {
        const std::string how = s.process->wait_for_exit();
        if (s.busy < 0 && stopping) {
          s.process.reset();  // told to stop, or stopped after a cancelled case
        } else if (s.busy < 0 && s.retiring) {
          ++out.worker_restarts;  // it retired after a runtime error, as its reply said
          spawn(s);
        } else {
          worker_died(s, how);
        }
        continue;
      }
      if (stopping && s.busy >= 0 && Clock::now() - stop_started > stop_grace) {
        s.process->wait_for_exit(/*kill_first=*/true);  // the case in flight is abandoned, not stored
        s.process.reset();
        s.busy = -1;
        continue;
      }
      if (s.busy >= 0 && Clock::now() - s.started > std::chrono::duration<double>(o.case_timeout_s)) {
        char why[96];
        std::snprintf(why, sizeof why, "no answer within the case timeout of %g s, killed", o.case_timeout_s);
        s.process->wait_for_exit(/*kill_first=*/true);
        worker_died(s, why);
      }
    }
  }
  for (Slot& s : slots) {
    if (!s.process) continue;
    s.process->close_input();
    s.process->wait_for_exit();
    s.process.reset();
  }
  out.run_ids = begun;
  if (!begun.empty()) outcome.run_id = begun.front();
  return out;
}

}  // namespace tilepath
