// The CLI (`tilepath analyze --json`) and the GUI's stage table give the same stage
// costs and sources for the same stored case: both go through core/analysis.

#include <cmath>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "core/analysis/case_match.h"
#include "fixture_db.h"
#include "ui/models/stage_table_model.h"
#include "ui/variant_analysis.h"

using namespace tilepath;
using namespace tilepath::ui;

class TestCliGuiAgreement : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir dir_;
  QString db_;

  QJsonObject analyzeJson(const OperatingPoint& op) {
    QProcess cli;
    cli.start(QStringLiteral(TILEPATH_CLI_PATH),
              {QStringLiteral("analyze"), QStringLiteral("--db"), db_, QStringLiteral("--batch"),
               QString::number(op.batch), QStringLiteral("--context"), QString::number(op.context),
               QStringLiteral("--kv"), QString::fromStdString(std::string(to_string(op.kv))), QStringLiteral("--cache"),
               QString::fromStdString(std::string(to_string(op.cache))), QStringLiteral("--json")});
    if (!cli.waitForFinished(60000)) return {};
    if (cli.exitCode() != 0) qWarning() << cli.readAllStandardError();
    return QJsonDocument::fromJson(cli.readAllStandardOutput()).object();
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    db_ = dir_.filePath(QStringLiteral("fixture.sqlite"));
    QVERIFY(test::writeFixtureDatabase(db_.toStdString()) > 0);
  }

  void sameStageCostsAndSources_data() {
    QTest::addColumn<int>("kv");
    QTest::addColumn<int>("cache");
    QTest::newRow("k16v16 cold") << int(KvDtype::k16v16) << int(CacheState::hbm_cold);
    QTest::newRow("k16v8 warm") << int(KvDtype::k16v8) << int(CacheState::l2_warm);
    QTest::newRow("k8v8 cold") << int(KvDtype::k8v8) << int(CacheState::hbm_cold);
  }
  void sameStageCostsAndSources() {
    QFETCH(int, kv);
    QFETCH(int, cache);
    OperatingPoint op;
    op.batch = 8;
    op.context = 4096;
    op.kv = static_cast<KvDtype>(kv);
    op.k_path = default_k_path(op.kv);
    op.mode = default_mode(op.kv, op.k_path);
    op.cache = static_cast<CacheState>(cache);

    const QJsonObject cli = analyzeJson(op);
    QVERIFY2(cli.contains(QStringLiteral("stages")), "tilepath analyze --json printed no stages");

    RunStore store = RunStore::open_read_only(db_.toStdString());
    const std::vector<CaseSummary> cases = store.cases();
    const std::optional<CaseSummary> stored = analysis::find_stored_case(cases, op);
    QVERIFY(stored.has_value());
    QCOMPARE(cli.value(QStringLiteral("case_id")).toInteger(), stored->case_id);
    StageTableModel model;
    model.setAnalysis(analysis::analyze_variant(op, stored));

    const QJsonArray stages = cli.value(QStringLiteral("stages")).toArray();
    QCOMPARE(model.rowCount(), stages.size());
    for (int r = 0; r < model.rowCount(); ++r) {
      const QJsonObject line = stages.at(r).toObject();
      QCOMPARE(line.value(QStringLiteral("stage")).toString(),
               QString::fromStdString(std::string(to_string(model.stageAt(r)))));
      QCOMPARE(model.index(r, StageTableModel::CostSource).data().toString(),
               line.value(QStringLiteral("source")).toString());
      const QString shown = model.index(r, StageTableModel::MeasuredUs).data().toString();
      if (line.value(QStringLiteral("cost_us")).isNull()) {
        QCOMPARE(shown, QStringLiteral("unknown"));
      } else {
        QCOMPARE(shown.toDouble(),
                 QString::number(line.value(QStringLiteral("cost_us")).toDouble(), 'g', 5).toDouble());
      }
    }
  }
};

QTEST_MAIN(TestCliGuiAgreement)
#include "test_cli_gui_agreement.moc"
