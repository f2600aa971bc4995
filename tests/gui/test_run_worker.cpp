// The worker runs a real sweep on the cpu backend off the GUI thread: progress
// arrives as signals, cancel stops it between cases, and the database holds
// exactly the cases the worker reported as stored. A second run resumes.

#include <QComboBox>
#include <QRadioButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
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
