#pragma once
// Runs a sweep (or one case) on a backend off the GUI thread. The plugin itself runs in
// `tilepath worker` processes (core/run/worker_pool.h), never in the GUI: a plugin that
// crashes, exits or hangs costs a worker, its case is retried once on a fresh one, and a
// case that ends two workers is stored as failed with a "poison:" message. The worker
// object turns core's ProgressObserver callbacks into Qt signals; RunController owns the
// thread and the worker so a widget only calls start()/cancel().

#include <atomic>
#include <string>

#include <QObject>
#include <QString>
#include <QStringList>
#include <QThread>

#include "core/sweep.h"

namespace tilepath::ui {

struct RunSummary {
  int total = 0, ran = 0, skipped_existing = 0, failed = 0, unsupported = 0;
  bool cancelled = false;
  qint64 run_id = 0;
  int worker_restarts = 0;
  QStringList poison;  // "label: why" of each case stored as failed after ending two workers
};

// The `tilepath` executable whose `worker` subcommand runs the GUI's plugin cases: the
// file TILEPATH_CLI names when it is set, else `tilepath` in the directory of the running
// program (tilepath-gui and tilepath are built into one bin/ and installed into one bindir).
std::string workerProgramPath();

class RunWorker : public QObject {
  Q_OBJECT
 public:
  explicit RunWorker(QObject* parent = nullptr);

  // Runs synchronously in the calling thread (the controller calls it on its
  // thread). Opens its own connection to dbPath, and the workers theirs; one commit per
  // finished case. A cancel requested before the call is honoured (resetCancel() clears it).
  void runSweep(const SweepSpec& spec, const Backend* backend, const QString& dbPath, const QString& command);

  // Seconds a case may run before its worker is killed and the case retried (then poison).
  void setCaseTimeout(double seconds) { case_timeout_s_.store(seconds); }

  // Thread-safe: no further case starts, and the case in flight sees its cancel flag; a
  // worker whose case does not stop within 10 s is abandoned. Finished cases stay stored.
  void requestCancel() { cancel_.store(1); }
  void resetCancel() { cancel_.store(0); }
  bool cancelRequested() const { return cancel_.load() != 0; }

 signals:
  void started(int totalCases);
  void progress(double fraction, const QString& label);
  // A case finished: stored (skipped=false) or already in the database (skipped=true).
  // message: the case's own (why it failed, or was unsupported; "poison: ..."), or empty.
  void caseDone(const QString& label, bool skipped, const QString& status, const QString& message);
  void finished(const tilepath::ui::RunSummary& summary);
  void failed(const QString& message);  // the run could not start or aborted; nothing stored is lost

 private:
  CancelFlag cancel_{0};
  std::atomic<double> case_timeout_s_{1800};
};

class RunController : public QObject {
  Q_OBJECT
 public:
  explicit RunController(QObject* parent = nullptr);
  ~RunController() override;  // cancels and joins a running sweep

  // Starts a sweep on the worker thread; false when one is already running.
  bool start(const SweepSpec& spec, const Backend* backend, const QString& dbPath, const QString& command);
  void cancel();
  // For the runs started after it (default 1800 s, as `tilepath sweep --case-timeout`).
  void setCaseTimeout(double seconds) { worker_->setCaseTimeout(seconds); }
  bool isRunning() const { return running_; }
  // Blocks until the current run ends (tests, shutdown). Returns false on timeout.
  bool wait(int timeoutMs);

 signals:
  void started(int totalCases);
  void progress(double fraction, const QString& label);
  void caseDone(const QString& label, bool skipped, const QString& status, const QString& message);
  void finished(const tilepath::ui::RunSummary& summary);
  void failed(const QString& message);

 private:
  QThread thread_;
  RunWorker* worker_ = nullptr;  // lives in thread_
  bool running_ = false;
};

}  // namespace tilepath::ui

Q_DECLARE_METATYPE(tilepath::ui::RunSummary)
