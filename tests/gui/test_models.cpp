// Every ui model under QAbstractItemModelTester, over a fixture database written
// through the real RunStore, plus the behaviour each model promises.

#include <cmath>

#include <QAbstractItemModelTester>
#include <QRegularExpression>
#include <QSortFilterProxyModel>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include "core/analysis/case_match.h"
#include "core/ii_model.h"
#include "core/plugin_host.h"
#include "fixture_db.h"
#include "ui/models/backends_model.h"
#include "ui/models/break_even_model.h"
#include "ui/models/case_comparison_model.h"
#include "ui/models/cases_model.h"
#include "ui/models/runs_model.h"
#include "ui/models/stage_table_model.h"
#include "ui/models/sweep_series_model.h"
#include "ui/table_export.h"
#include "ui/variant_analysis.h"

using namespace tilepath;
using namespace tilepath::ui;

class TestModels : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir dir_;
  std::string db_path_;
  int stored_ = 0;
  std::vector<CaseSummary> cases_;
  std::vector<RunInfo> runs_;

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(dir_.isValid());
    db_path_ = dir_.filePath(QStringLiteral("fixture.sqlite")).toStdString();
    stored_ = test::writeFixtureDatabase(db_path_);
    RunStore store = RunStore::open(db_path_);
    cases_ = store.cases();
    runs_ = store.runs();
    QCOMPARE(static_cast<int>(cases_.size()), stored_);
  }

  void backendsModel() {
    PluginHost host;
    host.discover();
    BackendsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setHost(&host);
    int expected = static_cast<int>(host.problems().size());
    for (const auto& b : host.backends()) expected += std::max<int>(1, static_cast<int>(b->devices().size()));
    QCOMPARE(model.rowCount(), expected);
    // Every plugin row names its plugin and ABI; a plugin with no devices says why.
    for (int r = 0; r < model.rowCount(); ++r) {
      if (model.rowKind(r) == BackendsModel::RowKind::problem) {
        QVERIFY(model.index(r, BackendsModel::Note).data().toString().startsWith(QStringLiteral("not loaded")));
        continue;
      }
      QCOMPARE(model.index(r, BackendsModel::Plugin).data().toString(),
               QString::fromStdString(model.backendAt(r)->name()));
      QVERIFY(model.index(r, BackendsModel::Abi)
                  .data()
                  .toString()
                  .startsWith(QString::number(TILEPATH_ABI_MAJOR) + QLatin1Char('.')));
      if (model.rowKind(r) == BackendsModel::RowKind::no_device)
        QVERIFY(model.index(r, BackendsModel::Note).data().toString().startsWith(QStringLiteral("no devices")));
      else
        QVERIFY(!model.index(r, BackendsModel::Device).data().toString().isEmpty());
    }
    model.setHost(nullptr);
    QCOMPARE(model.rowCount(), 0);
  }

  void runsModel() {
    RunsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setRuns(runs_, cases_);
    QCOMPARE(model.rowCount(), 1);
    QCOMPARE(model.index(0, RunsModel::Cases).data().toInt(), stored_);
    QCOMPARE(model.index(0, RunsModel::Device).data().toString(), QStringLiteral("Fixture GPU"));
    QCOMPARE(model.index(0, RunsModel::DeviceId).data().toString(), QStringLiteral("1 · 0000:00:06.0"));
    // A run stored before devices were recorded (schema < 8) says so rather than showing nothing.
    std::vector<RunInfo> older = runs_;
    older.front().device_index = -1;
    older.front().device_uid.clear();
    model.setRuns(older, cases_);
    QCOMPARE(model.index(0, RunsModel::DeviceId).data().toString(), QStringLiteral("not recorded"));
    model.setRuns({}, {});
    QCOMPARE(model.rowCount(), 0);
  }

  void casesModelSortsNumerically() {
    CasesModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setCases(cases_);
    QCOMPARE(model.rowCount(), stored_);
    QSortFilterProxyModel proxy;
    QAbstractItemModelTester proxy_tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
    proxy.setSourceModel(&model);
    proxy.setSortRole(CasesModel::SortRole);
    proxy.sort(CasesModel::LatencyUs, Qt::AscendingOrder);
    double previous = -1;
    for (int r = 0; r < proxy.rowCount(); ++r) {
      double v = proxy.index(r, CasesModel::LatencyUs).data(CasesModel::SortRole).toDouble();
      QVERIFY2(v >= previous, "latency column must sort as numbers");
      previous = v;
    }
    // Context sorts numerically too (16384 after 4096, unlike a text sort).
    proxy.sort(CasesModel::Context, Qt::DescendingOrder);
    QCOMPARE(proxy.index(0, CasesModel::Context).data().toInt(), 16384);
    // Filtering by a column value.
    proxy.setFilterKeyColumn(CasesModel::Kv);
    proxy.setFilterFixedString(QStringLiteral("k8v8"));
    QCOMPARE(proxy.rowCount(), stored_ / 3);
    // CSV of what is visible: a header plus one line per visible row.
    QString csv = modelToCsv(proxy);
    QCOMPARE(csv.count(QLatin1Char('\n')), proxy.rowCount() + 1);
    QVERIFY(csv.startsWith(QStringLiteral("Case,kv,K path,Mode,B,S,Cache,Latency (µs),Floor frac.")));
  }

  // integerSortKey is what data() gives under SortRole for the integer columns (a proxy may
  // compare it instead), and nothing for the others.
  void casesModelIntegerSortKeysAreTheSortData() {
    CasesModel model;
    model.setCases(cases_);
    QVERIFY(model.rowCount() > 0);
    int integer_columns = 0;
    for (int column = 0; column < CasesModel::ColumnCount; ++column) {
      const std::optional<qint64> key = CasesModel::integerSortKey(model.caseAt(0), column);
      if (!key) continue;
      ++integer_columns;
      for (int r = 0; r < model.rowCount(); ++r) {
        const QVariant data = model.index(r, column).data(CasesModel::SortRole);
        QCOMPARE(*CasesModel::integerSortKey(model.caseAt(r), column), data.toLongLong());
        QVERIFY(data.canConvert<qint64>() && data.typeId() != QMetaType::Double && data.typeId() != QMetaType::QString);
      }
    }
    QCOMPARE(integer_columns, 7);  // case, run, B, S, Hq, Hk, D
    QVERIFY(!CasesModel::integerSortKey(model.caseAt(0), CasesModel::LatencyUs));
    QVERIFY(!CasesModel::integerSortKey(model.caseAt(0), CasesModel::Kv));
  }

  void comparisonModel() {
    CaseComparisonModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    RunStore store = RunStore::open_read_only(db_path_);
    CaseRecord a = store.load_case(cases_[0].case_id);
    CaseRecord b = store.load_case(cases_[2].case_id);
    model.setCases(a, b);
    int row = model.rowOf(QStringLiteral("Measurements"), QStringLiteral("latency_us"));
    QVERIFY(row >= 0);
    const double expected = *b.measurement("latency_us") - *a.measurement("latency_us");
    QCOMPARE(model.index(row, CaseComparisonModel::Difference).data(CaseComparisonModel::ValueRole).toDouble(),
             expected);
    // k_prep exists only in the K8 case: A is empty, B has the cost.
    int prep = model.rowOf(QStringLiteral("Stage costs (µs/tile)"), QStringLiteral("k_prep (isolated)"));
    QVERIFY(prep >= 0);
    QVERIFY(model.index(prep, CaseComparisonModel::CaseA).data().toString().isEmpty());
    QVERIFY(!model.index(prep, CaseComparisonModel::CaseB).data().toString().isEmpty());
    model.setCases(a, std::nullopt);
    QVERIFY(model.rowCount() > 0);
    QCOMPARE(model.index(0, CaseComparisonModel::CaseB).data(), QVariant());
    model.setCases(std::nullopt, std::nullopt);
    QCOMPARE(model.rowCount(), 0);
  }

  void stageTableModel_data() {
    QTest::addColumn<int>("kv");
    QTest::addColumn<bool>("hasKPrep");
    QTest::newRow("k16v16") << int(KvDtype::k16v16) << false;
    QTest::newRow("k16v8") << int(KvDtype::k16v8) << false;
    QTest::newRow("k8v8") << int(KvDtype::k8v8) << true;
  }
  void stageTableModel() {
    QFETCH(int, kv);
    QFETCH(bool, hasKPrep);
    OperatingPoint op;
    op.batch = 8;
    op.context = 4096;
    op.kv = static_cast<KvDtype>(kv);
    op.k_path = default_k_path(op.kv);
    op.mode = default_mode(op.kv, op.k_path);
    std::optional<CaseSummary> measured = analysis::find_stored_case(cases_, op);
    QVERIFY(measured.has_value());
    VariantAnalysis analysis = analysis::analyze_variant(op, measured);
    StageTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setAnalysis(analysis);
    QCOMPARE(model.rowCount(), static_cast<int>(analysis.graph.stages().size()));
    bool found_prep = false, found_limit = false;
    for (int r = 0; r < model.rowCount(); ++r) {
      if (model.stageAt(r) == Stage::k_prep) found_prep = true;
      if (!model.index(r, StageTableModel::Limiting).data().toString().isEmpty()) {
        found_limit = true;
        QCOMPARE(model.stageAt(r), analysis.ii.limiting_stage);
      }
      // Measured column shows the case's isolated cost of that stage.
      const double cost = analysis.measured[model.stageAt(r)];
      if (std::isfinite(cost))
        QCOMPARE(model.index(r, StageTableModel::MeasuredUs).data().toString().toDouble(),
                 QString::number(cost, 'g', 5).toDouble());
    }
    QCOMPARE(found_prep, hasKPrep);
    QVERIFY(found_limit);
  }

  void stageTableModelShowsBelowZeroCostAsAtMostZero_data() {
    QTest::addColumn<double>("removal_us");
    QTest::addColumn<QString>("raw_text");
    QTest::newRow("negative") << -0.218 << QStringLiteral("-0.218 µs");
    QTest::newRow("zero") << 0.0 << QStringLiteral("difference 0 µs");
  }

  void stageTableModelShowsBelowZeroCostAsAtMostZero() {
    // An ablation difference at or below zero (the kernel was no faster without the stage)
    // is not a duration: the table says "hidden (≤ 0)", the raw value on hover.
    QFETCH(double, removal_us);
    QFETCH(QString, raw_text);
    OperatingPoint op;
    op.batch = 8;
    op.context = 4096;
    op.kv = KvDtype::k8v8;
    op.k_path = default_k_path(op.kv);
    op.mode = default_mode(op.kv, op.k_path);
    std::optional<CaseSummary> measured = analysis::find_stored_case(cases_, op);
    QVERIFY(measured.has_value());
    VariantAnalysis analysis = analysis::analyze_variant(op, measured);
    analysis.measured[Stage::qk] = removal_us;
    StageTableModel model;
    model.setAnalysis(analysis);
    int checked = 0;
    for (int r = 0; r < model.rowCount(); ++r) {
      const QString text = model.index(r, StageTableModel::MeasuredUs).data().toString();
      if (model.stageAt(r) == Stage::qk) {
        QCOMPARE(text, QStringLiteral("hidden (≤ 0)"));
        const QString tip = model.index(r, StageTableModel::MeasuredUs).data(Qt::ToolTipRole).toString();
        QVERIFY2(tip.contains(raw_text), qPrintable(tip));
        ++checked;
      } else {
        QVERIFY2(!text.startsWith(QStringLiteral("hidden")), qPrintable(text));
      }
    }
    QCOMPARE(checked, 1);
  }

  void sweepSeriesModel() {
    SweepSeriesModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setCases(cases_);
    model.setQuery(SweepAxis::context, SweepMetric::latency_us);
    // 3 dtype controls × warm/cold, 3 contexts each, at the only batch (8).
    QCOMPARE(model.fixedValue(), 8);
    QCOMPARE(static_cast<int>(model.series().size()), 6);
    QCOMPARE(model.rowCount(), 18);
    int warm = 0;
    for (const SweepSeries& s : model.series()) {
      warm += s.warm;
      QCOMPARE(static_cast<int>(s.points.size()), 3);
      for (size_t i = 1; i < s.points.size(); ++i) QVERIFY(s.points[i].x() > s.points[i - 1].x());
    }
    QCOMPARE(warm, 3);
    // Against batch at context 4096: one point per series.
    model.setQuery(SweepAxis::batch, SweepMetric::floor_fraction, 4096);
    QCOMPARE(model.fixedValue(), 4096);
    QCOMPARE(model.rowCount(), 6);
    // The perfect-stream fraction: only the cases that carry it (cold K8/V8), with its values.
    model.setQuery(SweepAxis::context, SweepMetric::stream_fraction);
    QCOMPARE(static_cast<int>(model.series().size()), 1);
    QVERIFY(!model.series().front().warm);
    QCOMPARE(static_cast<int>(model.series().front().points.size()), 3);
    for (const QPointF& p : model.series().front().points) QCOMPARE(p.y(), 0.5 + p.x() / 65536.0);
    // A backend that is not in the database gives no series.
    model.setQuery(SweepAxis::context, SweepMetric::latency_us, -1, QStringLiteral("no-such-backend"));
    QCOMPARE(model.rowCount(), 0);
    model.setCases({});
    QCOMPARE(model.rowCount(), 0);
  }

  // The matrix instruction family is a column of the runs table and a row of the compare
  // pane; chart series name it where the cases shown hold both families.
  void mmaColumnRowAndSeriesNames() {
    std::vector<CaseSummary> cases = cases_;
    CaseSummary wgmma = cases.front();
    wgmma.case_id = 100000;
    wgmma.record.op.mma = Mma::wgmma;
    cases.push_back(wgmma);

    CasesModel table;
    QAbstractItemModelTester tester(&table, QAbstractItemModelTester::FailureReportingMode::QtTest);
    table.setCases(cases);
    QCOMPARE(table.headerData(CasesModel::Mma, Qt::Horizontal).toString(), QStringLiteral("MMA"));
    QCOMPARE(table.index(0, CasesModel::Mma).data().toString(), QStringLiteral("mma_sync"));
    QCOMPARE(table.index(table.rowOfCase(wgmma.case_id), CasesModel::Mma).data().toString(), QStringLiteral("wgmma"));

    CaseComparisonModel compare;
    QAbstractItemModelTester compare_tester(&compare, QAbstractItemModelTester::FailureReportingMode::QtTest);
    compare.setCases(cases.front().record, wgmma.record);
    const int row = compare.rowOf(QStringLiteral("Operating point"), QStringLiteral("mma"));
    QVERIFY(row >= 0);
    QCOMPARE(compare.index(row, CaseComparisonModel::CaseA).data().toString(), QStringLiteral("mma_sync"));
    QCOMPARE(compare.index(row, CaseComparisonModel::CaseB).data().toString(), QStringLiteral("wgmma"));

    SweepSeriesModel series;
    QAbstractItemModelTester series_tester(&series, QAbstractItemModelTester::FailureReportingMode::QtTest);
    series.setCases(cases_);
    series.setQuery(SweepAxis::context, SweepMetric::latency_us);
    for (const SweepSeries& s : series.series()) QVERIFY2(!s.name.contains(QStringLiteral("mma")), qPrintable(s.name));
    const int one_family = static_cast<int>(series.series().size());
    series.setCases(cases);
    series.setQuery(SweepAxis::context, SweepMetric::latency_us, wgmma.record.op.batch);
    QCOMPARE(static_cast<int>(series.series().size()), one_family + 1);
    int sync = 0, async = 0;
    for (const SweepSeries& s : series.series()) {
      sync += s.name.contains(QStringLiteral("/mma_sync"));
      async += s.name.contains(QStringLiteral("/wgmma"));
    }
    QCOMPARE(sync, one_family);
    QCOMPARE(async, 1);
  }

  void sweepPointToolTipGivesTheRepeatsSpread() {
    // One case stores the min and max of its repeats; the hover text gives them (the whiskers).
    std::vector<CaseSummary> cases = cases_;
    CaseSummary* spread = nullptr;
    for (CaseSummary& c : cases)
      if (c.record.op.kv == KvDtype::k8v8 && c.record.op.context == 4096 && c.record.op.cache == CacheState::hbm_cold)
        spread = &c;
    QVERIFY(spread);
    const double latency = *spread->record.measurement("latency_us");
    spread->record.measurements.push_back({"latency_min_us", latency * 0.9, "us"});
    spread->record.measurements.push_back({"latency_max_us", latency * 1.2, "us"});
    SweepSeriesModel model;
    model.setCases(cases);
    model.setQuery(SweepAxis::context, SweepMetric::latency_us);
    int with_spread = 0, without = 0;
    for (const SweepSeries& s : model.series()) {
      QCOMPARE(s.low.size(), s.points.size());
      QCOMPARE(s.high.size(), s.points.size());
      for (std::size_t i = 0; i < s.points.size(); ++i) {
        const QString tip = sweepPointToolTip(s, i, SweepAxis::context, SweepMetric::latency_us);
        QVERIFY2(tip.startsWith(s.name), qPrintable(tip));
        if (std::isfinite(s.low[i])) {
          ++with_spread;
          QCOMPARE(s.points[i].x(), 4096.0);
          QVERIFY2(
              tip.contains(
                  QStringLiteral("min %1 µs, max %2 µs").arg(latency * 0.9, 0, 'g', 4).arg(latency * 1.2, 0, 'g', 4)),
              qPrintable(tip));
          QVERIFY2(tip.contains(QStringLiteral("spread 30.0%")), qPrintable(tip));
        } else {
          ++without;
          QVERIFY2(tip.contains(QStringLiteral("min/max not stored")), qPrintable(tip));
        }
      }
    }
    QCOMPARE(with_spread, 1);
    QVERIFY(without > 0);
  }

  void breakEvenModel() {
    BreakEvenModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setCases(cases_);
    QCOMPARE(model.rowCount(), 6);  // 3 contexts × 2 cache states
    for (const BreakEvenRow& row : model.rows()) {
      QVERIFY(row.decomposition.has_value());
      // The decomposition sums as the design note's formula says.
      const BreakEven& d = *row.decomposition;
      QVERIFY(std::abs(d.delta_us - (d.unhidden_k8_prep_us + d.pipeline_penalty_us - d.extra_k16_hbm_us)) < 1e-9);
      QVERIFY(std::abs(d.delta_us - (row.ii_k8v8_us - row.ii_k16v8_us)) < 1e-9);
      QCOMPARE(row.v_hidden_fraction, v_hidden_fraction(row.t_k16v16_us, row.t_k16v8_us, row.t_k8v8_us));
    }
    // Every number column names its unit in the header.
    for (int c = BreakEvenModel::TK16V16; c < BreakEvenModel::ColumnCount; ++c) {
      const QString header = model.headerData(c, Qt::Horizontal).toString();
      QVERIFY2(header.contains(QRegularExpression(QStringLiteral("\\((µs|µs/1k|0–1)\\)$"))), qPrintable(header));
    }
    // Without K16/V8 cases there is nothing to decompose.
    std::vector<CaseSummary> no_k16v8;
    for (const CaseSummary& c : cases_)
      if (c.record.op.kv != KvDtype::k16v8) no_k16v8.push_back(c);
    model.setCases(no_k16v8);
    QCOMPARE(model.rowCount(), 0);
  }
};

QTEST_MAIN(TestModels)
#include "test_models.moc"
