// The gate view over a database of gate results with known metrics, written through the
// real RunStore as `tilepath gate --db` writes them: each cell shows pass/fail, the worst
// rel_l2 and KL of the largest context's case, in green or red, every metric on hover;
// the context chart has one line per distribution with the threshold dashed and the
// failing points ringed; the step chart appears only for a representation run with
// decode steps; kernel-check rows never show; an empty database says how to make
// results; the view agrees with `tilepath gate --json`; `--view gate --screenshot` works.

#include <cmath>

#include <QAbstractItemModelTester>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QProcess>
#include <QScatterSeries>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include "core/numerics/gate_metrics.h"
#include "core/quality/gate.h"
#include "ui/models/gate_model.h"
#include "ui/qt_text.h"
#include "ui/views/gate_view.h"
#include "ui/widget_export.h"

using namespace tilepath;
using namespace tilepath::ui;

namespace {

struct Metrics {
  double rel_l2, max_abs, kl, top8, top32;
};

// One gate case of the fixture.
struct FixtureCase {
  KRepr repr;
  KvDtype kv;
  std::string distribution;
  int context;
  Metrics worst;
  int steps = 0;
};

// plain fails qwen_bias at both contexts; prebias passes both distributions and has a
// run of 4 decode steps; K16/V8 has gaussian only.
const FixtureCase kFixture[] = {
    {KRepr::plain, KvDtype::k8v8, "gaussian", 1024, {0.04, 0.2, 4e-4, 0.875, 0.9}},
    {KRepr::plain, KvDtype::k8v8, "gaussian", 4096, {0.045, 0.25, 5e-4, 0.75, 0.85}},
    {KRepr::plain, KvDtype::k8v8, "qwen_bias", 1024, {0.2, 1.2, 0.03, 0.5, 0.7}},
    {KRepr::plain, KvDtype::k8v8, "qwen_bias", 4096, {0.3, 1.5, 0.06, 0.375, 0.6}},
    {KRepr::prebias, KvDtype::k8v8, "gaussian", 4096, {0.042, 0.22, 4.7e-4, 0.875, 0.9}},
    {KRepr::prebias, KvDtype::k8v8, "qwen_bias", 4096, {0.044, 0.23, 6.7e-4, 0.75, 0.875}},
    {KRepr::prebias, KvDtype::k8v8, "qwen_bias", 1024, {0.048, 0.26, 9e-4, 0.75, 0.875}, 4},
    {KRepr::plain, KvDtype::k16v8, "gaussian", 4096, {0.029, 0.15, 0, 1, 1}},
};
constexpr int kSteps = 4;

// Step i (1-based) of the steps run: rel_l2 0.04 + 0.002 i, kl 5e-4 + 1e-4 i.
double stepRelL2(int i) { return 0.04 + 0.002 * i; }
double stepKl(int i) { return 5e-4 + 1e-4 * i; }

OperatingPoint fixtureOp(const FixtureCase& f) {
  OperatingPoint op;
  op.batch = 2;
  op.context = f.context;
  op.kv = f.kv;
  op.k_repr = f.repr;
  apply_path_defaults(op, false, false);
  return op;
}

std::string gateJson(const FixtureCase& f) {
  quality::GateResult r;
  r.distribution = f.distribution;
  r.settings.op = fixtureOp(f);
  r.representation = quality::representation_label(r.settings.op);
  r.settings.steps = f.steps;
  for (int i = 1; i <= std::max(1, f.steps); ++i) {
    quality::GateStep s;
    s.step = f.steps > 0 ? i : 0;
    s.tokens = f.context + (f.steps > 0 ? i : 0);
    s.metrics.rel_l2 = {f.steps > 0 ? stepRelL2(i) : f.worst.rel_l2, 0.02};
    s.metrics.max_abs = {f.worst.max_abs, 0.1};
    s.metrics.kl = {f.steps > 0 ? stepKl(i) : f.worst.kl, 1e-4};
    s.metrics.top8 = {f.worst.top8, 1};
    s.metrics.top32 = {f.worst.top32, 1};
    s.verdict = numerics::judge(s.metrics, r.settings.thresholds);
    r.steps.push_back(s);
  }
  return r.to_json().dump(2);
}

// The fixture's case ids, in kFixture order; then a speed run's case with kernel-check rows only.
struct FixtureIds {
  std::vector<std::int64_t> gate;
  std::int64_t kernel_check = 0;
};

FixtureIds writeGateFixture(const std::string& path) {
  RunStore store = RunStore::open(path);
  FixtureIds ids;
  RunInfo run;
  run.backend = "gate";
  run.device = "float64 on the host";
  run.command = "gate fixture";
  store.begin_run(run);
  const numerics::GateThresholds t;
  for (const FixtureCase& f : kFixture) {
    CaseRecord rec;
    rec.op = fixtureOp(f);
    rec.case_key = rec.op.key() + "|gate=" + f.distribution + "|seed=1|steps=" + std::to_string(f.steps);
    rec.status = CaseStatus::ok;
    rec.kernel.kernel_name = "gate:" + quality::representation_label(rec.op);
    auto row = [&](const char* metric, double value, double threshold, bool at_most) {
      const bool passed = std::isnan(threshold) || (at_most ? value <= threshold : value >= threshold);
      rec.quality.push_back({metric, value, threshold, passed, f.distribution});
      rec.measurements.push_back({std::string("gate_") + metric + "_median", value / 2, ""});
    };
    row("rel_l2", f.worst.rel_l2, t.rel_l2, true);
    row("max_abs", f.worst.max_abs, t.max_abs, true);
    row("kl", f.worst.kl, t.kl, true);
    row("top8", f.worst.top8, t.top8, false);
    row("top32", f.worst.top32, t.top32, false);
    rec.measurements.push_back({"gate_rows_checked", 16, "rows"});
    rec.measurements.push_back({"gate_rows_total", 16, "rows"});
    const std::string json = gateJson(f);
    rec.artifacts.push_back({"gate.json", "application/json", std::vector<std::uint8_t>(json.begin(), json.end())});
    ids.gate.push_back(store.add_case(run.id, rec));
  }
  store.finish_run(run.id);

  RunInfo speed;
  speed.backend = "cpu";
  speed.device = "Fixture CPU";
  store.begin_run(speed);
  CaseRecord rec;
  rec.op.batch = 2;
  rec.op.context = 16384;  // a context no gate case has: a point there would show
  rec.status = CaseStatus::ok;
  rec.measurements = {{"latency_us", 10, "us"}};
  rec.quality = {{"rel_l2", 0.5, 0.006, false, "random"},
                 {"max_abs", 0.5, NAN, true, "random"},
                 {"kernel_check_rel_l2", 0.5, 0.006, false, "gaussian"},
                 {"kernel_check_max_abs", 0.5, NAN, true, "gaussian"}};
  ids.kernel_check = store.add_case(speed.id, rec);
  store.finish_run(speed.id);
  return ids;
}

bool passes(const Metrics& m) {
  const numerics::GateThresholds t;
  return m.rel_l2 <= t.rel_l2 && m.kl <= t.kl && m.top8 >= t.top8 && m.top32 >= t.top32;
}

QString label(const FixtureCase& f) { return qs(quality::representation_label(fixtureOp(f))); }

QAbstractSeries* seriesNamed(QChart* chart, const QString& name) {
  for (QAbstractSeries* s : chart->series())
    if (s->name() == name) return s;
  return nullptr;
}

QList<QPointF> pointsOf(QChart* chart, const QString& name) {
  auto* s = qobject_cast<QXYSeries*>(seriesNamed(chart, name));
  return s ? s->points() : QList<QPointF>{};
}

}  // namespace

class TestGateView : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString db_;
  FixtureIds ids_;
  std::vector<CaseSummary> cases_;

  analysis::GateJsonReader reader() const {
    const std::string path = db_.toStdString();
    return [path](std::int64_t id) {
      return analysis::gate_json_artifact(RunStore::open_read_only(path).load_case(id, true));
    };
  }

  // A view over the fixture, shown at a size where the charts lay out.
  void show(GateView& view) const {
    view.setCases(cases_, reader());
    view.resize(1300, 900);
    view.show();
    QCoreApplication::processEvents();
  }

  int rowOf(const GateModel& model, const QString& representation) const {
    for (int r = 0; r < model.rowCount(); ++r)
      if (model.headerData(r, Qt::Vertical).toString() == representation) return r;
    return -1;
  }
  int columnOf(const GateModel& model, const QString& distribution) const {
    for (int c = 0; c < model.columnCount(); ++c)
      if (model.headerData(c, Qt::Horizontal).toString() == distribution) return c;
    return -1;
  }
  // The fixture case a cell shows: the largest context of its representation and distribution.
  int shownFixtureIndex(const QString& representation, const std::string& distribution) const {
    int best = -1;
    for (int i = 0; i < int(std::size(kFixture)); ++i)
      if (label(kFixture[i]) == representation && kFixture[i].distribution == distribution &&
          (best < 0 || kFixture[i].context > kFixture[best].context))
        best = i;
    return best;
  }

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(dir_.isValid());
    db_ = dir_.filePath(QStringLiteral("gate.sqlite"));
    ids_ = writeGateFixture(db_.toStdString());
    cases_ = RunStore::open_read_only(db_.toStdString()).cases();
    QCOMPARE(cases_.size(), std::size(kFixture) + 1);
  }

  void modelUnderTester() {
    GateModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setCases(cases_, reader());
    QCOMPARE(model.rowCount(), 3);     // plain, prebias, K16/V8; not the kernel-check case
    QCOMPARE(model.columnCount(), 2);  // gaussian, qwen_bias
    QCOMPARE(model.headerData(0, Qt::Horizontal).toString(), QStringLiteral("gaussian"));
    QCOMPARE(model.headerData(1, Qt::Horizontal).toString(), QStringLiteral("qwen_bias"));
    model.setCases({});
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.columnCount(), 0);
  }

  void cellsShowPassFailRelL2AndKl() {
    GateModel model;
    model.setCases(cases_, reader());
    int cells = 0;
    for (const FixtureCase& f : kFixture) {
      const int row = rowOf(model, label(f)), column = columnOf(model, qs(f.distribution));
      QVERIFY2(row >= 0 && column >= 0, qPrintable(label(f)));
      const int shown = shownFixtureIndex(label(f), f.distribution);
      if (&f != &kFixture[shown]) continue;  // a smaller context: in the series, not the cell
      ++cells;
      const QModelIndex index = model.index(row, column);
      const bool pass = passes(f.worst);
      const QString expected = QStringLiteral("%1\nrel_l2 %2 · KL %3")
                                   .arg(pass ? QStringLiteral("pass") : QStringLiteral("FAIL"))
                                   .arg(f.worst.rel_l2)
                                   .arg(f.worst.kl);
      QCOMPARE(index.data().toString(), expected);
      QCOMPARE(index.data(GateModel::PassedRole).toBool(), pass);
      QCOMPARE(index.data(Qt::BackgroundRole).value<QColor>(), pass ? gatePassColour() : gateFailColour());
      QCOMPARE(index.data(GateModel::CaseIdRole).toLongLong(), ids_.gate[shown]);
    }
    QCOMPARE(cells, 5);
    QVERIFY(gatePassColour() != gateFailColour());
    // plain fails qwen_bias (rel_l2 0.3 > 0.1); K16/V8 has no qwen_bias case.
    const int plain = rowOf(model, label(kFixture[0])), qwen = columnOf(model, QStringLiteral("qwen_bias"));
    QCOMPARE(model.index(plain, qwen).data().toString(), QStringLiteral("FAIL\nrel_l2 0.3 · KL 0.06"));
    const QModelIndex k16_qwen = model.index(rowOf(model, label(kFixture[7])), qwen);
    QCOMPARE(k16_qwen.data().toString(), QStringLiteral("—"));
    QVERIFY(!k16_qwen.data(GateModel::PassedRole).isValid());
    QVERIFY(!k16_qwen.data(Qt::BackgroundRole).isValid());
  }

  void tableIsPaintedGreenAndRed() {
    GateView view;
    show(view);
    QTableView* table = view.tableView();
    const QImage image = renderWidget(*table);
    const GateModel& model = *view.model();
    for (int r = 0; r < model.rowCount(); ++r)
      for (int c = 0; c < model.columnCount(); ++c) {
        const QModelIndex index = model.index(r, c);
        if (index == table->currentIndex() || model.cellAt(r, c) == nullptr) continue;  // the selection is highlighted
        const QRect rect = table->visualRect(index).translated(table->viewport()->pos());
        const QPoint corner = rect.topLeft() + QPoint(3, 3);
        QCOMPARE(QColor(image.pixel(corner)),
                 index.data(GateModel::PassedRole).toBool() ? gatePassColour() : gateFailColour());
      }
  }

  void tooltipHasEveryMetricRowsAndCases() {
    GateModel model;
    model.setCases(cases_, reader());
    const FixtureCase& f = kFixture[3];  // plain, qwen_bias, S=4096
    const QString text = model.index(rowOf(model, label(f)), columnOf(model, QStringLiteral("qwen_bias")))
                             .data(Qt::ToolTipRole)
                             .toString();
    QVERIFY2(text.startsWith(label(f) + QStringLiteral(" on qwen_bias: FAIL")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("case %1 (gate): B=2, S=4096").arg(ids_.gate[3])), qPrintable(text));
    QVERIFY(text.contains(QStringLiteral("rel_l2: worst 0.3 (≤ 0.1, FAIL), median 0.15")));
    QVERIFY(text.contains(QStringLiteral("max_abs: worst 1.5 (not gated), median 0.75")));
    QVERIFY(text.contains(QStringLiteral("kl: worst 0.06 (≤ 0.005, FAIL), median 0.03")));
    QVERIFY(text.contains(QStringLiteral("top8: worst 0.375 (≥ 0.5, FAIL), median 0.188")));
    QVERIFY(text.contains(QStringLiteral("top32: worst 0.6 (≥ 0.5, pass), median 0.3")));
    QVERIFY(text.contains(QStringLiteral("rows checked: 16 of 16")));
    QVERIFY2(text.contains(
                 QStringLiteral("cases (by context): %1 (S=1024), %2 (S=4096)").arg(ids_.gate[2]).arg(ids_.gate[3])),
             qPrintable(text));
  }

  void contextChartPerDistributionWithThreshold() {
    GateView view;
    show(view);
    const GateModel& model = *view.model();
    const int plain = rowOf(model, label(kFixture[0]));
    view.selectCell(plain, columnOf(model, QStringLiteral("qwen_bias")));
    QCOMPARE(view.selectedRow(), plain);
    QCOMPARE(view.selectedDistribution(), QStringLiteral("qwen_bias"));
    QChart* chart = view.contextChart();
    auto* x = qobject_cast<QLogValueAxis*>(chart->axes(Qt::Horizontal).value(0));
    QVERIFY(x);
    QCOMPARE(x->base(), 2.0);

    struct Expected {
      QString metric, threshold;
      double Metrics::*value;
    };
    const Expected metrics[] = {{QStringLiteral("rel_l2"), QStringLiteral("threshold ≤ 0.1"), &Metrics::rel_l2},
                                {QStringLiteral("kl"), QStringLiteral("threshold ≤ 0.005"), &Metrics::kl},
                                {QStringLiteral("top8"), QStringLiteral("threshold ≥ 0.5"), &Metrics::top8},
                                {QStringLiteral("max_abs"), QString(), &Metrics::max_abs}};
    for (const Expected& e : metrics) {
      view.metricCombo()->setCurrentIndex(view.metricCombo()->findData(e.metric));
      QCOMPARE(view.metric(), *analysis::parse_gate_metric(ss(e.metric)));
      for (const char* distribution : {"gaussian", "qwen_bias"}) {
        QList<QPointF> expected, failing;
        for (const FixtureCase& f : kFixture)
          if (label(f) == label(kFixture[0]) && f.distribution == distribution) {
            expected << QPointF(f.context, f.worst.*e.value);
            if (!passes(f.worst)) failing << QPointF(f.context, f.worst.*e.value);
          }
        std::sort(expected.begin(), expected.end(), [](QPointF a, QPointF b) { return a.x() < b.x(); });
        QCOMPARE(pointsOf(chart, QLatin1String(distribution)), expected);
      }
      // Every qwen_bias case of plain fails; none of gaussian.
      QCOMPARE(pointsOf(chart, QStringLiteral("fails the gate")).size(), 2);
      for (const QPointF& p : pointsOf(chart, QStringLiteral("fails the gate")))
        QVERIFY(pointsOf(chart, QStringLiteral("qwen_bias")).contains(p));
      if (e.threshold.isEmpty()) {
        for (QAbstractSeries* s : chart->series()) QVERIFY(!s->name().startsWith(QStringLiteral("threshold")));
        continue;
      }
      auto* threshold = qobject_cast<QLineSeries*>(seriesNamed(chart, e.threshold));
      QVERIFY2(threshold, qPrintable(e.threshold));
      QCOMPARE(threshold->pen().style(), Qt::DashLine);
      const double limit = e.threshold.section(QLatin1Char(' '), 2).toDouble();
      for (const QPointF& p : threshold->points()) QCOMPARE(p.y(), limit);
      QVERIFY(threshold->points().front().x() < 1024 && threshold->points().back().x() > 4096);
    }
    // The kernel check's S=16384 point is nowhere.
    for (QAbstractSeries* s : chart->series())
      if (auto* xy = qobject_cast<QXYSeries*>(s); xy && !s->name().startsWith(QStringLiteral("threshold")))
        for (const QPointF& p : xy->points()) QVERIFY(p.x() != 16384);
  }

  void stepChartOnlyWithSteps() {
    GateView view;
    show(view);
    const GateModel& model = *view.model();
    const int prebias = rowOf(model, label(kFixture[4])), plain = rowOf(model, label(kFixture[0]));
    // It starts on the representation that has a run with steps.
    QCOMPARE(view.selectedRow(), prebias);
    QVERIFY(view.stepChartView()->isVisible());
    view.metricCombo()->setCurrentIndex(view.metricCombo()->findData(QStringLiteral("rel_l2")));
    const QString name = QStringLiteral("qwen_bias, S=1024, case %1").arg(ids_.gate[6]);
    QList<QPointF> expected;
    for (int i = 1; i <= kSteps; ++i) expected << QPointF(i, stepRelL2(i));
    const QList<QPointF> got = pointsOf(view.stepChart(), name);
    QCOMPARE(got.size(), expected.size());
    for (int i = 0; i < kSteps; ++i) {
      QCOMPARE(got[i].x(), expected[i].x());
      QVERIFY(std::abs(got[i].y() - expected[i].y()) < 1e-12);
    }
    QVERIFY(seriesNamed(view.stepChart(), QStringLiteral("threshold ≤ 0.1")));
    view.metricCombo()->setCurrentIndex(view.metricCombo()->findData(QStringLiteral("kl")));
    QVERIFY(std::abs(pointsOf(view.stepChart(), name).back().y() - stepKl(kSteps)) < 1e-12);

    view.selectCell(plain, 0);
    QVERIFY(!view.stepChartView()->isVisible());
    QVERIFY(view.stepChart()->series().isEmpty());
    view.selectCell(prebias, 1);
    QVERIFY(view.stepChartView()->isVisible());
  }

  // A table built without a reader (as on the main window's other thread) and given to the
  // view with one: the same cells, selection and step chart as setCases with the reader.
  void aPrebuiltTableGetsItsStepSeriesFromTheView() {
    GateView direct, prebuilt;
    show(direct);
    prebuilt.setTable(analysis::build_gate_table(cases_), reader());
    prebuilt.resize(1300, 900);
    prebuilt.show();
    QCoreApplication::processEvents();
    const GateModel &a = *direct.model(), &b = *prebuilt.model();
    QCOMPARE(b.rowCount(), a.rowCount());
    QCOMPARE(b.columnCount(), a.columnCount());
    for (int r = 0; r < a.rowCount(); ++r) {
      QCOMPARE(b.rowAt(r)->label, a.rowAt(r)->label);
      QCOMPARE(b.rowAt(r)->step_series.size(), a.rowAt(r)->step_series.size());
      for (int c = 0; c < a.columnCount(); ++c) QCOMPARE(b.index(r, c).data(), a.index(r, c).data());
    }
    QCOMPARE(prebuilt.selectedRow(), direct.selectedRow());
    QVERIFY(prebuilt.stepChartView()->isVisible());
    QCOMPARE(prebuilt.stepChart()->series().size(), direct.stepChart()->series().size());
  }

  void emptyDatabaseSaysHowToMakeResults() {
    GateView view;
    view.resize(1300, 900);
    view.show();
    QVERIFY(view.showsEmptyMessage());
    QVERIFY(
        view.emptyMessage()->text().contains(QStringLiteral("tilepath gate --distribution qwen_bias --all --db FILE")));
    // Kernel-check rows alone are no gate results.
    std::vector<CaseSummary> kernel_check;
    for (const CaseSummary& c : cases_)
      if (c.case_id == ids_.kernel_check) kernel_check.push_back(c);
    QCOMPARE(kernel_check.size(), std::size_t(1));
    view.setCases(kernel_check);
    QVERIFY(view.showsEmptyMessage());
    view.setCases(cases_, reader());
    QVERIFY(!view.showsEmptyMessage());
    QCOMPARE(view.model()->rowCount(), 3);
  }

  void viewAgreesWithTheCli() {
    const QString db = dir_.filePath(QStringLiteral("cli-gate.sqlite"));
    QProcess cli;
    cli.start(QStringLiteral(TILEPATH_CLI_PATH),
              {QStringLiteral("gate"), QStringLiteral("--distribution"), QStringLiteral("qwen_bias"),
               QStringLiteral("--batch"), QStringLiteral("1"), QStringLiteral("--context"), QStringLiteral("256"),
               QStringLiteral("--steps"), QStringLiteral("3"), QStringLiteral("--db"), db, QStringLiteral("--json")});
    QVERIFY(cli.waitForFinished(120000));
    QVERIFY2(cli.exitCode() == 0 || cli.exitCode() == 1, cli.readAllStandardError().constData());
    const QJsonObject j = QJsonDocument::fromJson(cli.readAllStandardOutput()).object();
    QVERIFY(j.contains(QStringLiteral("metrics")));

    const std::vector<CaseSummary> cases = RunStore::open_read_only(db.toStdString()).cases();
    QCOMPARE(cases.size(), std::size_t(1));
    GateView view;
    const std::string path = db.toStdString();
    view.setCases(cases, [path](std::int64_t id) {
      return analysis::gate_json_artifact(RunStore::open_read_only(path).load_case(id, true));
    });
    const GateModel& model = *view.model();
    QCOMPARE(model.rowCount(), 1);
    QCOMPARE(model.headerData(0, Qt::Vertical).toString(), j.value(QStringLiteral("representation")).toString());
    QCOMPARE(model.distributionAt(0), QStringLiteral("qwen_bias"));
    const analysis::GateCell* cell = model.cellAt(0, 0);
    QVERIFY(cell);
    QCOMPARE(cell->shown.passed, j.value(QStringLiteral("passed")).toBool());
    const QJsonObject metrics = j.value(QStringLiteral("metrics")).toObject();
    for (analysis::GateMetric m : analysis::kGateMetrics)
      QCOMPARE(cell->shown.metric(m).worst, metrics.value(qs(to_string(m))).toDouble());
    const QJsonObject detail = j.value(QStringLiteral("metrics_detail")).toObject();
    QCOMPARE(cell->shown.rows_checked, detail.value(QStringLiteral("rows_checked")).toInt());
    QCOMPARE(cell->shown.rows_total, detail.value(QStringLiteral("rows_total")).toInt());
    QCOMPARE(model.index(0, 0).data(GateModel::PassedRole).toBool(), j.value(QStringLiteral("passed")).toBool());

    // The step chart is the JSON's steps.
    const QJsonArray steps = j.value(QStringLiteral("steps")).toArray();
    QCOMPARE(steps.size(), 3);
    view.metricCombo()->setCurrentIndex(view.metricCombo()->findData(QStringLiteral("rel_l2")));
    const QList<QPointF> points =
        pointsOf(view.stepChart(), QStringLiteral("qwen_bias, S=256, case %1").arg(cases.front().case_id));
    QCOMPARE(points.size(), steps.size());
    for (int i = 0; i < steps.size(); ++i) {
      const QJsonObject s = steps.at(i).toObject();
      QCOMPARE(points[i].x(), s.value(QStringLiteral("step")).toDouble());
      QCOMPARE(points[i].y(), s.value(QStringLiteral("metrics"))
                                  .toObject()
                                  .value(QStringLiteral("rel_l2"))
                                  .toObject()
                                  .value(QStringLiteral("worst"))
                                  .toDouble());
    }
  }

  void screenshotOptionWritesThePng() {
    const QString db = dir_.filePath(QStringLiteral("gate-copy.sqlite"));
    QVERIFY(QFile::copy(db_, db));
    const QString png = dir_.filePath(QStringLiteral("gate.png"));
    QProcess gui;
    gui.start(QStringLiteral(TILEPATH_GUI_PATH), {QStringLiteral("--open"), db, QStringLiteral("--view"),
                                                  QStringLiteral("gate"), QStringLiteral("--screenshot"), png});
    QVERIFY(gui.waitForFinished(120000));
    QVERIFY2(gui.exitCode() == 0, gui.readAllStandardError().constData());
    const QImage image(png);
    QCOMPARE(image.size(), QSize(1440, 900));
    QVERIFY(distinctColours(image) >= 8);
    // Both cell colours are in the picture.
    bool pass = false, fail = false;
    for (int y = 0; y < image.height(); y += 2)
      for (int x = 0; x < image.width(); x += 2) {
        const QColor c(image.pixel(x, y));
        pass = pass || c == gatePassColour();
        fail = fail || c == gateFailColour();
      }
    QVERIFY(pass && fail);
  }
};

QTEST_MAIN(TestGateView)
#include "test_gate_view.moc"
