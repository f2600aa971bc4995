#pragma once
// Runs a sweep (or one case) on a backend off the GUI thread. The worker turns
// core's ProgressObserver callbacks into Qt signals; RunController owns the
// thread and the worker so a widget only calls start()/cancel().

#include <atomic>

#include <QObject>
#include <QString>
#include <QThread>

#include "core/sweep.h"

namespace tilepath::ui {

struct RunSummary {
  int total = 0, ran = 0, skipped_existing = 0, failed = 0, unsupported = 0;
  bool cancelled = false;
  qint64 run_id = 0;
};

class RunWorker : public QObject {
  Q_OBJECT
 public:
  explicit RunWorker(QObject* parent = nullptr);

  // Runs synchronously in the calling thread (the controller calls it on its
  // thread). Opens its own connection to dbPath; one commit per finished case.
  // A cancel requested before the call is honoured (resetCancel() clears it).
  void runSweep(const SweepSpec& spec, const Backend* backend, const QString& dbPath, const QString& command);

  // Thread-safe: the sweep stops between cases and the backend sees its cancel flag.
  void requestCancel() { cancel_.store(1); }
  void resetCancel() { cancel_.store(0); }
  bool cancelRequested() const { return cancel_.load() != 0; }

 signals:
  void started(int totalCases);
  void progress(double fraction, const QString& label);
  // A case finished: stored (skipped=false) or already in the database (skipped=true).
  void caseDone(const QString& label, bool skipped, const QString& status);
  void finished(const tilepath::ui::RunSummary& summary);
  void failed(const QString& message);  // the run could not start or aborted; nothing stored is lost

 private:
  CancelFlag cancel_{0};
};

class RunController : public QObject {
  Q_OBJECT
 public:
  explicit RunController(QObject* parent = nullptr);
  ~RunController() override;  // cancels and joins a running sweep

  // Starts a sweep on the worker thread; false when one is already running.
  bool start(const SweepSpec& spec, const Backend* backend, const QString& dbPath, const QString& command);
  void cancel();
  bool isRunning() const { return running_; }
  // Blocks until the current run ends (tests, shutdown). Returns false on timeout.
  bool wait(int timeoutMs);

 signals:
  void started(int totalCases);
  void progress(double fraction, const QString& label);
  void caseDone(const QString& label, bool skipped, const QString& status);
  void finished(const tilepath::ui::RunSummary& summary);
  void failed(const QString& message);

 private:
  QThread thread_;
  RunWorker* worker_ = nullptr;  // lives in thread_
  bool running_ = false;
};

}  // namespace tilepath::ui

Q_DECLARE_METATYPE(tilepath::ui::RunSummary)
