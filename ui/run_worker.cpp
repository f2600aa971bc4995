#include "ui/run_worker.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>

#include <QElapsedTimer>
#include <QEventLoop>
#include <QTimer>

#include "core/analysis/gate_table.h"
#include "core/run/worker_pool.h"
#include "ui/qt_text.h"

namespace tilepath::ui {

namespace {

// Adapts ProgressObserver (called on the worker thread) to the worker's signals;
// queued connections carry them to the GUI thread.
class SignalObserver : public ProgressObserver {
 public:
  explicit SignalObserver(RunWorker* worker) : worker_(worker) {}
  void progress(double fraction, const std::string& label) override { emit worker_->progress(fraction, qs(label)); }
  void case_done(const CaseRecord& rec, bool skipped) override {
    const OperatingPoint& op = rec.op;
    QString label = QStringLiteral("%1 B=%2 S=%3 %4")
                        .arg(qs(op.variant_label()))
                        .arg(op.batch)
                        .arg(op.context)
                        .arg(op.cache == CacheState::l2_warm ? QStringLiteral("warm") : QStringLiteral("cold"));
    // The log line says what came back: status, latency and the gate on the case's inputs.
    QString status = qs(to_string(rec.status));
    if (!skipped) {
      if (const auto latency = rec.measurement("latency_us"))
        status += QStringLiteral(", %1 µs").arg(formatNumber(*latency, 4));
      if (const std::optional<bool> gate = analysis::gate_passed(rec))
        status += *gate ? QStringLiteral(", gate pass") : QStringLiteral(", gate FAIL");
    }
    emit worker_->caseDone(label, skipped, status, skipped ? QString() : qs(rec.message));
  }
  bool cancelled() const override { return worker_->cancelRequested(); }

 private:
  RunWorker* worker_;
};

}  // namespace

std::string workerProgramPath() {
  if (const char* named = std::getenv("TILEPATH_CLI"); named != nullptr && *named != '\0') return named;
  return (std::filesystem::path(running_program_path()).parent_path() / "tilepath").string();
}

RunWorker::RunWorker(QObject* parent) : QObject(parent) { qRegisterMetaType<tilepath::ui::RunSummary>(); }

void RunWorker::runSweep(const SweepSpec& spec, const Backend* backend, const QString& dbPath, const QString& command) {
  if (!backend) {
    emit failed(QStringLiteral("no backend selected"));
    return;
  }
  emit started(static_cast<int>(spec.cases.size()));
  try {
    WorkerSweepOptions options;
    options.worker_program = workerProgramPath();
    // Said before the database is touched, naming the file looked for and how to name another.
    if (access(options.worker_program.c_str(), X_OK) != 0 ||
        !std::filesystem::is_regular_file(options.worker_program)) {
      emit failed(tr("cannot run plugin cases: %1 is missing or not executable. tilepath-gui runs each case in a "
                     "`tilepath worker` process and looks for the tilepath CLI beside itself; build or install "
                     "both, or set TILEPATH_CLI to the tilepath executable.")
                      .arg(qs(options.worker_program)));
      return;
    }
    options.db = ss(dbPath);
    options.devices = {spec.settings.device};
    options.case_timeout_s = case_timeout_s_.load();
    options.command_line = ss(command);
    WorkerSweepOutcome outcome;
    {  // the store is closed (its last checkpoint written) before `finished` lets anyone open it
      RunStore store = RunStore::open(options.db);
      SignalObserver observer(this);
      outcome = run_sweep_in_workers(spec, *backend, store, options, &observer, &cancel_);
    }
    const SweepOutcome& o = outcome.sweep;
    RunSummary summary;
    summary.total = o.total;
    summary.ran = o.ran;
    summary.skipped_existing = o.skipped_existing;
    summary.failed = o.failed;
    summary.unsupported = o.unsupported;
    summary.cancelled = o.cancelled;
    summary.run_id = o.run_id;
    summary.worker_restarts = outcome.worker_restarts;
    for (const PoisonCase& p : outcome.poison) summary.poison << qs(p.label + ": " + p.why);
    emit finished(summary);
  } catch (const std::exception& e) {
    emit failed(qs(e.what()));
  }
}

RunController::RunController(QObject* parent) : QObject(parent) {
  worker_ = new RunWorker;
  worker_->moveToThread(&thread_);
  connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
  connect(worker_, &RunWorker::started, this, &RunController::started);
  connect(worker_, &RunWorker::progress, this, &RunController::progress);
  connect(worker_, &RunWorker::caseDone, this, &RunController::caseDone);
  connect(worker_, &RunWorker::finished, this, [this](const RunSummary& s) {
    running_ = false;
    emit finished(s);
  });
  connect(worker_, &RunWorker::failed, this, [this](const QString& m) {
    running_ = false;
    emit failed(m);
  });
  thread_.setObjectName(QStringLiteral("tilepath-run-worker"));
  thread_.start();
}

RunController::~RunController() {
  worker_->requestCancel();
  thread_.quit();
  thread_.wait();
}

bool RunController::start(const SweepSpec& spec, const Backend* backend, const QString& dbPath,
                          const QString& command) {
  if (running_) return false;
  running_ = true;
  worker_->resetCancel();
  RunWorker* worker = worker_;
  QMetaObject::invokeMethod(
      worker_, [worker, spec, backend, dbPath, command] { worker->runSweep(spec, backend, dbPath, command); },
      Qt::QueuedConnection);
  return true;
}

void RunController::cancel() { worker_->requestCancel(); }

bool RunController::wait(int timeoutMs) {
  QElapsedTimer timer;
  timer.start();
  while (running_) {
    if (timer.elapsed() > timeoutMs) return false;
    QEventLoop loop;
    QTimer::singleShot(20, &loop, &QEventLoop::quit);
    loop.exec();
  }
  return true;
}

}  // namespace tilepath::ui
