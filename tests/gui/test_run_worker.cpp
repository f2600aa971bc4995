// The worker runs a real sweep on the cpu backend off the GUI thread: progress
// arrives as signals, cancel stops it between cases, and the database holds
// exactly the cases the worker reported as stored. A second run resumes.
// The plugin runs in `tilepath worker` processes: the faulty test plugin
// (tests/plugins/fixtures/fake_backend.c, FAKE_FAULTY) segfaults, aborts, exits and hangs
// by batch, and the test process (the GUI) lives on with those cases stored as poison.

#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>

#include <QComboBox>
#include <QElapsedTimer>
#include <QFile>
#include <QListWidget>
#include <QPushButton>
#include <QRadioButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include "core/plugin_host.h"
#include "core/store/run_store.h"
#include "ui/database_session.h"
#include "ui/run_worker.h"
#include "ui/views/run_panel.h"

using namespace tilepath;
using namespace tilepath::ui;

namespace {
SweepSpec smallCpuSpec() {
  SweepSpec spec;
  spec.name = "gui-test";
  spec.backend = "cpu";
  spec.settings.warmup = 0;
  spec.settings.repeats = 1;
  spec.settings.seed = 7;
  spec.settings.stage_costs = false;
  spec.settings.tile_interval = false;
  OperatingPoint base;
  base.batch = 1;
  base.q_heads = 2;
  base.kv_heads = 1;
  base.head_dim = 64;
  for (int context : {64, 128, 192, 256}) {
    for (KvDtype kv : {KvDtype::k16v16, KvDtype::k8v8}) {
      OperatingPoint op = base;
      op.context = context;
      op.kv = kv;
      op.k_path = default_k_path(kv);
      op.mode = default_mode(kv, op.k_path);
      spec.cases.push_back(op);
    }
  }
  return spec;
}

// One case per batch on the faulty plugin: 3 segfaults, 5 aborts, 7 exits, 9 hangs, 11
// segfaults once, 13 takes 300 ms, the rest are good.
SweepSpec faultySpec(const std::vector<int>& batches) {
  SweepSpec spec;
  spec.name = "gui-faults";
  spec.backend = "fake_faulty";
  spec.settings.warmup = 1;
  spec.settings.repeats = 1;
  spec.settings.stage_costs = false;
  spec.settings.tile_interval = false;
  OperatingPoint base;
  base.context = 128;
  base.q_heads = 8;
  base.kv_heads = 2;
  base.head_dim = 64;
  base.page_size = 16;
  base.kv = KvDtype::k8v8;
  base.k_path = default_k_path(base.kv);
  base.mode = default_mode(base.kv, base.k_path);
  for (int batch : batches) {
    OperatingPoint op = base;
    op.batch = batch;
    spec.cases.push_back(op);
  }
  return spec;
}

const CaseSummary* findBatch(const std::vector<CaseSummary>& cases, int batch) {
  for (const CaseSummary& c : cases)
    if (c.record.op.batch == batch) return &c;
  return nullptr;
}

// True when every child of this process has been reaped: no worker is left behind.
bool noChildLeft() { return waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD; }
}  // namespace

class TestRunWorker : public QObject {
  Q_OBJECT
 private:
  PluginHost host_;
  const Backend* cpu_ = nullptr;
  QTemporaryDir dir_;

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(dir_.isValid());
    // The faulty plugin beside the real ones, here and in the workers (they inherit the environment).
    const QByteArray plugins = qEnvironmentVariableIsEmpty("TILEPATH_PLUGIN_PATH") ? QByteArray(TILEPATH_PLUGIN_DIR)
                                                                                   : qgetenv("TILEPATH_PLUGIN_PATH");
    qputenv("TILEPATH_PLUGIN_PATH", plugins + ":" TILEPATH_FAKE_PLUGIN_DIR "/libtilepath_backend_fake_faulty.so");
    if (qEnvironmentVariableIsEmpty("TILEPATH_CLI")) qputenv("TILEPATH_CLI", TILEPATH_CLI_PATH);
    // Under AddressSanitizer the plugin's deliberate segfault must end its worker as a plain
    // SIGSEGV, not as a sanitizer report.
    const QByteArray asan = qgetenv("ASAN_OPTIONS");
    qputenv("ASAN_OPTIONS", asan + (asan.isEmpty() ? "" : ":") + "handle_segv=0");
    host_.discover();
    cpu_ = host_.find("cpu");
    QVERIFY2(cpu_, "the cpu backend plugin must be built and found (TILEPATH_PLUGIN_PATH)");
    QVERIFY2(!cpu_->devices().empty(), cpu_->no_device_reason().c_str());
  }

  void cancelKeepsWhatWasStored() {
    const QString db = dir_.filePath(QStringLiteral("cancel.sqlite"));
    const SweepSpec spec = smallCpuSpec();
    RunController controller;
    QSignalSpy progress(&controller, &RunController::progress);
    QSignalSpy finished(&controller, &RunController::finished);
    QSignalSpy failed(&controller, &RunController::failed);
    int stored_reported = 0;
    connect(&controller, &RunController::caseDone, this, [&](const QString&, bool skipped, const QString&) {
      if (!skipped) ++stored_reported;
      controller.cancel();  // cancel as soon as the first case has landed
    });
    QVERIFY(controller.start(spec, cpu_, db, QStringLiteral("test")));
    QVERIFY(controller.isRunning());
    QVERIFY(!controller.start(spec, cpu_, db, QStringLiteral("test")));  // one run at a time
    QVERIFY(controller.wait(300000));
    QCOMPARE(failed.count(), 0);
    QCOMPARE(finished.count(), 1);
    const RunSummary summary = finished.at(0).at(0).value<RunSummary>();
    QVERIFY(summary.cancelled);
    QCOMPARE(summary.total, static_cast<int>(spec.cases.size()));
    QVERIFY(progress.count() > 0);
    for (const QList<QVariant>& p : progress) {
      double f = p.at(0).toDouble();
      QVERIFY(f >= 0.0 && f <= 1.0);
    }
    QVERIFY(stored_reported >= 1);
    RunStore store = RunStore::open_read_only(db.toStdString());
    QCOMPARE(store.case_count(), static_cast<std::int64_t>(stored_reported));
    QVERIFY(store.case_count() < static_cast<std::int64_t>(spec.cases.size()));

    // Resume: the stored cases are skipped, the rest run, nothing is lost.
    QSignalSpy finished2(&controller, &RunController::finished);
    disconnect(&controller, &RunController::caseDone, this, nullptr);
    QVERIFY(controller.start(spec, cpu_, db, QStringLiteral("test resume")));
    QVERIFY(controller.wait(300000));
    QCOMPARE(finished2.count(), 1);
    const RunSummary resumed = finished2.at(0).at(0).value<RunSummary>();
    QVERIFY(!resumed.cancelled);
    QCOMPARE(resumed.skipped_existing + resumed.ran + resumed.failed + resumed.unsupported, resumed.total);
    RunStore after = RunStore::open_read_only(db.toStdString());
    QCOMPARE(after.case_count(),
             static_cast<std::int64_t>(stored_reported + resumed.ran + resumed.failed + resumed.unsupported));
  }

  // The Run panel's Keys choice travels in the spec's settings: the stored case carries
  // the gate on those keys beside the kernel check.
  void keyDistributionReachesTheStoredGate() {
    SweepSpec spec = smallCpuSpec();
    spec.cases.resize(2);  // K16/V16 and K8/V8 at S=64
    spec.settings.key_distribution = "qwen_bias";
    const QString db = dir_.filePath(QStringLiteral("keys.sqlite"));
    RunController controller;
    QSignalSpy finished(&controller, &RunController::finished);
    QSignalSpy done(&controller, &RunController::caseDone);
    QVERIFY(controller.start(spec, cpu_, db, QStringLiteral("test")));
    QVERIFY(controller.wait(120000));
    QCOMPARE(finished.count(), 1);
    // The log line of each case: status, latency and the gate's verdict.
    QCOMPARE(done.count(), 2);
    for (const QList<QVariant>& args : done) {
      const QString status = args.at(2).toString();
      QVERIFY2(status.startsWith(QStringLiteral("ok, ")) && status.contains(QStringLiteral(" µs, gate ")),
               qPrintable(status));
    }
    RunStore store = RunStore::open_read_only(db.toStdString());
    QCOMPARE(store.case_count(), std::int64_t(2));
    for (const CaseSummary& c : store.cases()) {
      QVERIFY2(c.record.case_key.find("|keys=qwen_bias") != std::string::npos, c.record.case_key.c_str());
      bool gate = false, check = false;
      for (const QualityRow& q : c.record.quality) {
        QCOMPARE(QString::fromStdString(q.distribution), QStringLiteral("qwen_bias"));
        gate = gate || q.metric == "kl";
        check = check || q.metric == "kernel_check_rel_l2";
      }
      QVERIFY(gate);
      QVERIFY(check);
    }
  }

  // A spec file keeps its own settings: the panel's repeats and keys are disabled, saying why.
  void runPanelDisablesWhatASpecDecides() {
    DatabaseSession session;
    RunPanel panel(&host_, &session);
    auto* spec = panel.findChild<QRadioButton*>(QStringLiteral("runSpec"));
    auto* repeats = panel.findChild<QSpinBox*>(QStringLiteral("runRepeats"));
    auto* keys = panel.findChild<QComboBox*>(QStringLiteral("runKeys"));
    QVERIFY(spec && repeats && keys);
    QVERIFY(repeats->isEnabled());
    spec->setChecked(true);
    QVERIFY(!repeats->isEnabled());
    QVERIFY(!keys->isEnabled());
    QVERIFY(repeats->toolTip().contains(QStringLiteral("settings.repeats")));
    QCOMPARE(keys->count(), 3);
  }

  // The Run panel as a user drives it: its log gives each stored case's latency, and its
  // Cancel button, pressed once the first case has landed, ends the sweep after at most the
  // case in flight, keeping exactly the cases the log reported.
  void runPanelLogsLatencyAndCancelsAfterTheCaseInFlight() {
    const QString db = dir_.filePath(QStringLiteral("panel.sqlite"));
    DatabaseSession session;
    QString error;
    QVERIFY2(session.open(db, &error), qPrintable(error));
    RunPanel panel(&host_, &session);
    auto* log = panel.findChild<QListWidget*>();
    QPushButton* cancel = nullptr;
    for (QPushButton* b : panel.findChildren<QPushButton*>())
      if (b->text() == QStringLiteral("Cancel")) cancel = b;
    QVERIFY(log && cancel);
    QSignalSpy finished(&panel, &RunPanel::runFinished);
    int done_before_cancel = -1, done = 0;
    connect(panel.controller(), &RunController::caseDone, this, [&] {
      ++done;
      if (done_before_cancel < 0 && cancel->isEnabled()) {
        done_before_cancel = done;
        cancel->click();
      }
    });
    const SweepSpec spec = smallCpuSpec();
    QVERIFY2(panel.startSweep(spec, QStringLiteral("cpu"), /*quiet=*/true), qPrintable(panel.lastError()));
    QVERIFY(panel.controller()->wait(300000));
    QCOMPARE(finished.count(), 1);
    const RunSummary summary = finished.at(0).at(0).value<RunSummary>();
    QVERIFY(summary.cancelled);
    QVERIFY(!cancel->isEnabled());
    // At most the case in flight when Cancel was pressed reports after it; none starts later.
    QVERIFY2(done - done_before_cancel <= 1,
             qPrintable(QStringLiteral("%1 cases reported after the cancel").arg(done - done_before_cancel)));
    QStringList lines;
    for (int i = 0; i < log->count(); ++i) lines << log->item(i)->text();
    int ok_lines = 0;
    for (const QString& line : lines) {
      if (!line.contains(QStringLiteral(" ok"))) continue;
      ++ok_lines;
      QVERIFY2(line.contains(QStringLiteral(" µs")), qPrintable(QStringLiteral("no latency in '%1'").arg(line)));
    }
    QVERIFY(ok_lines >= 1);
    QVERIFY(lines.filter(QStringLiteral("cancel requested")).size() == 1);
    QVERIFY(lines.last().contains(QStringLiteral("cancelled: ")));
    RunStore store = RunStore::open_read_only(db.toStdString());
    QCOMPARE(store.case_count(), static_cast<std::int64_t>(ok_lines));
    QVERIFY(store.case_count() < static_cast<std::int64_t>(spec.cases.size()));
  }

  // A plugin that segfaults, aborts, exits or hangs costs a worker process, never the GUI:
  // each such case is tried on a fresh worker once more, then stored as failed with a
  // "poison:" message that the Run panel's log shows; the case that crashes only once is
  // stored ok from its retry, and the good cases are ok.
  void faultyPluginCostsWorkersNotTheGui() {
    const Backend* faulty = host_.find("fake_faulty");
    QVERIFY2(faulty, "the faulty test plugin must be built (target fake_faulty)");
    const QString crashedOnce = dir_.filePath(QStringLiteral("crashed-once"));
    const QString runLog = dir_.filePath(QStringLiteral("runs.log"));
    qputenv("TILEPATH_FAKE_CRASH_ONCE", crashedOnce.toUtf8());
    qputenv("TILEPATH_FAKE_RUN_LOG", runLog.toUtf8());
    const QString db = dir_.filePath(QStringLiteral("faults.sqlite"));
    DatabaseSession session;
    QVERIFY(session.open(db));
    RunPanel panel(&host_, &session);
    RunController* controller = panel.controller();
    controller->setCaseTimeout(2);  // B=9 hangs: killed after 2 s, twice
    QSignalSpy done(controller, &RunController::caseDone);
    QSignalSpy finished(controller, &RunController::finished);
    QSignalSpy failed(controller, &RunController::failed);
    const SweepSpec spec = faultySpec({1, 3, 5, 7, 9, 11, 13});
    QVERIFY(panel.startSweep(spec, QStringLiteral("fake_faulty"), /*quiet=*/true));
    QVERIFY(controller->wait(120000));
    QCOMPARE(failed.count(), 0);
    QCOMPARE(finished.count(), 1);
    const RunSummary summary = finished.at(0).at(0).value<RunSummary>();
    QVERIFY(!summary.cancelled);
    QCOMPARE(summary.total, 7);
    QCOMPARE(summary.ran, 7);
    QCOMPARE(summary.failed, 4);  // B=3, 5, 7, 9
    QCOMPARE(summary.poison.size(), 4);
    QVERIFY2(summary.worker_restarts >= 9, qPrintable(QString::number(summary.worker_restarts)));  // 4 x 2 + 1
    QVERIFY(noChildLeft());

    // Stored: the good cases and the retried one ok, each poison case failed saying how its workers ended.
    const std::vector<CaseSummary> cases = RunStore::open_read_only(db.toStdString()).cases();
    QCOMPARE(cases.size(), std::size_t(7));
    for (int batch : {1, 11, 13}) {
      const CaseSummary* c = findBatch(cases, batch);
      QVERIFY2(c && c->record.status == CaseStatus::ok, qPrintable(QString::number(batch)));
    }
    const std::vector<std::pair<int, std::string>> poison = {
        {3, "SIGSEGV"}, {5, "SIGABRT"}, {7, "exit status 0"}, {9, "case timeout of 2 s"}};
    for (const auto& [batch, how] : poison) {
      const CaseSummary* c = findBatch(cases, batch);
      QVERIFY2(c, qPrintable(QString::number(batch)));
      QCOMPARE(c->record.status, CaseStatus::failed);
      const std::string& message = c->record.message;
      QVERIFY2(message.rfind("poison: ", 0) == 0 && message.find("fake_faulty") != std::string::npos &&
                   message.find(how) != std::string::npos,
               message.c_str());
    }
    // B=11 crashed its first worker and ran once more; every other case that returned ran once.
    QVERIFY(QFile::exists(crashedOnce));
    QFile log(runLog);
    QVERIFY(log.open(QIODevice::ReadOnly));
    const QString runs = QString::fromUtf8(log.readAll());
    QCOMPARE(runs.count(QStringLiteral("B=11 ")), 2);
    QCOMPARE(runs.count(QStringLiteral("B=1 ")), 1);
    QCOMPARE(runs.count(QStringLiteral("B=13 ")), 1);
    QCOMPARE(runs.count(QStringLiteral("B=3 ")), 2);

    // What the log says: a line per case, the poison ones with their message.
    QCOMPARE(done.count(), 7);
    int poisonReported = 0;
    for (const QList<QVariant>& args : done) {
      const QString status = args.at(2).toString(), message = args.at(3).toString();
      if (message.startsWith(QStringLiteral("poison: "))) {
        ++poisonReported;
        QCOMPARE(status, QStringLiteral("failed"));
      }
    }
    QCOMPARE(poisonReported, 4);
    auto* list = panel.findChild<QListWidget*>();
    QVERIFY(list);
    int poisonLines = 0;
    for (int i = 0; i < list->count(); ++i)
      if (list->item(i)->text().contains(QStringLiteral("failed: ")) &&
          list->item(i)->text().contains(QStringLiteral("poison: the fake_faulty plugin's worker ended twice")))
        ++poisonLines;
    QCOMPARE(poisonLines, 4);

    // A second run skips the poison cases instead of crashing on them again.
    QSignalSpy finished2(controller, &RunController::finished);
    QVERIFY(panel.startSweep(spec, QStringLiteral("fake_faulty"), /*quiet=*/true));
    QVERIFY(controller->wait(60000));
    QCOMPARE(finished2.count(), 1);
    const RunSummary resumed = finished2.at(0).at(0).value<RunSummary>();
    QCOMPARE(resumed.skipped_existing, 7);
    QCOMPARE(resumed.worker_restarts, 0);
    qunsetenv("TILEPATH_FAKE_CRASH_ONCE");
    qunsetenv("TILEPATH_FAKE_RUN_LOG");
  }

  // Cancel while a case hangs: the hung worker is abandoned after the grace period, the run
  // ends as cancelled, and the case that finished before stays stored.
  void cancelAbandonsAHungWorkerAndKeepsWhatFinished() {
    const Backend* faulty = host_.find("fake_faulty");
    QVERIFY(faulty);
    const QString db = dir_.filePath(QStringLiteral("hang.sqlite"));
    RunController controller;
    controller.setCaseTimeout(600);
    QSignalSpy finished(&controller, &RunController::finished);
    connect(&controller, &RunController::caseDone, this, [&](const QString&, bool, const QString&, const QString&) {
      QTimer::singleShot(300, &controller, [&] { controller.cancel(); });  // B=9 is in flight by then
    });
    QElapsedTimer timer;
    timer.start();
    QVERIFY(controller.start(faultySpec({1, 9}), faulty, db, QStringLiteral("test")));
    QVERIFY(controller.wait(60000));
    QVERIFY2(timer.elapsed() < 40000, qPrintable(QString::number(timer.elapsed())));
    QCOMPARE(finished.count(), 1);
    QVERIFY(finished.at(0).at(0).value<RunSummary>().cancelled);
    QVERIFY(noChildLeft());
    const std::vector<CaseSummary> cases = RunStore::open_read_only(db.toStdString()).cases();
    QCOMPARE(cases.size(), std::size_t(1));
    QCOMPARE(cases.front().record.op.batch, 1);
    QCOMPARE(cases.front().record.status, CaseStatus::ok);
  }

  // The GUI looks for `tilepath` beside its own executable unless TILEPATH_CLI names one;
  // a missing one is an error naming the path, before the database is created.
  void aMissingWorkerProgramIsNamed() {
    const QByteArray saved = qgetenv("TILEPATH_CLI");
    qunsetenv("TILEPATH_CLI");
    const std::string beside = QCoreApplication::applicationDirPath().toStdString() + "/tilepath";
    QCOMPARE(QString::fromStdString(workerProgramPath()), QString::fromStdString(beside));
    const QString missing = dir_.filePath(QStringLiteral("no-such-dir/tilepath"));
    qputenv("TILEPATH_CLI", missing.toUtf8());
    RunController controller;
    QSignalSpy failed(&controller, &RunController::failed);
    const QString db = dir_.filePath(QStringLiteral("never.sqlite"));
    QVERIFY(controller.start(smallCpuSpec(), cpu_, db, QStringLiteral("test")));
    QVERIFY(controller.wait(60000));
    qputenv("TILEPATH_CLI", saved);
    QCOMPARE(failed.count(), 1);
    const QString message = failed.at(0).at(0).toString();
    QVERIFY2(message.contains(missing) && message.contains(QStringLiteral("TILEPATH_CLI")), qPrintable(message));
    QVERIFY(!QFile::exists(db));
  }

  void badDatabasePathFailsCleanly() {
    RunController controller;
    QSignalSpy failed(&controller, &RunController::failed);
    QVERIFY(
        controller.start(smallCpuSpec(), cpu_, QStringLiteral("/nonexistent-dir/x/y.sqlite"), QStringLiteral("test")));
    QVERIFY(controller.wait(60000));
    QCOMPARE(failed.count(), 1);
    QVERIFY(failed.at(0).at(0).toString().contains(QStringLiteral("y.sqlite")));
  }
};

QTEST_MAIN(TestRunWorker)
#include "test_run_worker.moc"
