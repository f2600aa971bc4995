// The sweep charts: one series per variant and cache state in both charts, the
// shared legend hides/shows a series in both, and the choice survives a re-query;
// the lower chart shows the chosen fraction (byte floor or perfect stream).

#include <QAbstractSeries>
#include <QChart>
#include <QLineSeries>
#include <QListWidget>
#include <QLogValueAxis>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QValueAxis>
#include <QtTest>

#include "fixture_db.h"
#include "ui/models/sweep_series_model.h"
#include "ui/views/charts_view.h"
#include "ui/views/variant_palette.h"

using namespace tilepath;
using namespace tilepath::ui;

namespace {
QAbstractSeries* seriesNamed(QChart* chart, const QString& name) {
  for (QAbstractSeries* s : chart->series())
    if (s->name() == name) return s;
  return nullptr;
}
double yAxisMax(QChart* chart) {
  const QList<QAbstractAxis*> axes = chart->axes(Qt::Vertical);
  if (axes.isEmpty()) return NAN;
  if (auto* log = qobject_cast<QLogValueAxis*>(axes.front())) return log->max();
  if (auto* lin = qobject_cast<QValueAxis*>(axes.front())) return lin->max();
  return NAN;
}
// The largest y of one chart's series named name.
double seriesYMax(const SweepSeriesModel& model, const QString& name) {
  double out = -INFINITY;
  for (const SweepSeries& s : model.series())
    if (s.name == name)
      for (const QPointF& p : s.points) out = std::max(out, p.y());
  return out;
}
}  // namespace

class TestChartsView : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::string db_;  // the fixture database, written once

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(dir_.isValid());
    db_ = dir_.filePath(QStringLiteral("fixture.sqlite")).toStdString();
    test::writeFixtureDatabase(db_);
  }

  void legendTogglesSeriesInBothCharts() {
    ChartsView view;
    view.setCases(RunStore::open_read_only(db_).cases());

    QCOMPARE(view.latencyChart()->series().size(), 6);  // 3 dtype controls × warm/cold
    QCOMPARE(view.floorChart()->series().size(), 6);
    auto* legend = view.findChild<QListWidget*>(QStringLiteral("chartsLegend"));
    QVERIFY(legend);
    QCOMPARE(legend->count(), 6);

    QListWidgetItem* item = legend->item(0);
    const QString name = item->text();
    QVERIFY(seriesNamed(view.latencyChart(), name)->isVisible());
    item->setCheckState(Qt::Unchecked);
    QVERIFY(!seriesNamed(view.latencyChart(), name)->isVisible());
    QVERIFY(!seriesNamed(view.floorChart(), name)->isVisible());
    // Other series stay visible.
    QVERIFY(seriesNamed(view.latencyChart(), legend->item(1)->text())->isVisible());

    // Switching the x axis to batch re-creates the series; the hidden one stays hidden.
    view.setAxis(1);
    QCOMPARE(view.latencyModel()->axis(), SweepAxis::batch);
    QAbstractSeries* again = seriesNamed(view.latencyChart(), name);
    QVERIFY(again);
    QVERIFY(!again->isVisible());
    legend->item(0)->setCheckState(Qt::Checked);
    QVERIFY(seriesNamed(view.latencyChart(), name)->isVisible());
  }

  void hideAllShowAllAndShowOnly() {
    ChartsView view;
    view.setCases(RunStore::open_read_only(db_).cases());
    auto* legend = view.findChild<QListWidget*>(QStringLiteral("chartsLegend"));
    QVERIFY(legend && legend->count() == 6);
    view.hideAllSeries();
    for (QChart* chart : {view.latencyChart(), view.floorChart()})
      for (QAbstractSeries* s : chart->series()) QVERIFY2(!s->isVisible(), qPrintable(s->name()));
    for (int i = 0; i < legend->count(); ++i) QCOMPARE(legend->item(i)->checkState(), Qt::Unchecked);

    const QString only = legend->item(2)->text();
    view.showOnlySeries(only);
    for (QChart* chart : {view.latencyChart(), view.floorChart()})
      for (QAbstractSeries* s : chart->series()) QCOMPARE(s->isVisible(), s->name() == only);
    for (int i = 0; i < legend->count(); ++i)
      QCOMPARE(legend->item(i)->checkState(), legend->item(i)->text() == only ? Qt::Checked : Qt::Unchecked);
    // A re-query keeps the choice.
    view.setAxis(1);
    for (QAbstractSeries* s : view.latencyChart()->series()) QCOMPARE(s->isVisible(), s->name() == only);

    view.showAllSeries();
    for (QChart* chart : {view.latencyChart(), view.floorChart()})
      for (QAbstractSeries* s : chart->series()) QVERIFY(s->isVisible());
  }

  void yAxisRescalesToTheVisibleSeries() {
    ChartsView view;
    view.setCases(RunStore::open_read_only(db_).cases());
    const SweepSeriesModel& model = *view.latencyModel();
    QString fastest;
    double fastest_max = INFINITY, overall_max = -INFINITY;
    for (const SweepSeries& s : model.series()) {
      const double m = seriesYMax(model, s.name);
      overall_max = std::max(overall_max, m);
      if (m < fastest_max) fastest_max = m, fastest = s.name;
    }
    QVERIFY(fastest_max < overall_max / 1.2);
    const double all_top = yAxisMax(view.latencyChart());
    QVERIFY(all_top >= overall_max);
    view.showOnlySeries(fastest);
    const double only_top = yAxisMax(view.latencyChart());
    QVERIFY2(
        only_top >= fastest_max && only_top < overall_max,
        qPrintable(QStringLiteral("top %1, fastest max %2, all %3").arg(only_top).arg(fastest_max).arg(overall_max)));
    view.showAllSeries();
    QCOMPARE(yAxisMax(view.latencyChart()), all_top);
  }

  void legendNamesAreWhole() {
    ChartsView view;
    view.resize(1000, 700);
    view.setCases(RunStore::open_read_only(db_).cases());
    auto* legend = view.findChild<QListWidget*>(QStringLiteral("chartsLegend"));
    QVERIFY(legend);
    QCOMPARE(legend->textElideMode(), Qt::ElideNone);
    int longest = 0;
    for (int i = 0; i < legend->count(); ++i)
      longest = std::max(longest, legend->fontMetrics().horizontalAdvance(legend->item(i)->text()));
    QVERIFY2(legend->minimumWidth() >= longest + legend->iconSize().width(),
             qPrintable(QStringLiteral("legend %1 px, longest name %2 px").arg(legend->minimumWidth()).arg(longest)));
  }

  void heldValueFollowsTheOperatingPoint() {
    ChartsView view;
    view.setCases(RunStore::open_read_only(db_).cases());
    view.setAxis(1);  // against batch, at a held context: the fixture has 1024, 4096, 16384
    OperatingPoint op;
    op.batch = 8;
    op.context = 16384;
    view.followOperatingPoint(op);
    QCOMPARE(view.latencyModel()->fixedValue(), 16384);
    QVERIFY(view.latencyChart()->title().contains(QStringLiteral("context = 16384")));
    op.context = 1024;
    view.followOperatingPoint(op);
    QCOMPARE(view.latencyModel()->fixedValue(), 1024);
    QCOMPARE(view.floorModel()->fixedValue(), 1024);
    // A context the sweep does not hold leaves the held value where it was.
    op.context = 3000;
    view.followOperatingPoint(op);
    QCOMPARE(view.latencyModel()->fixedValue(), 1024);
    // The followed point survives a change of axis and back.
    op.context = 4096;
    view.followOperatingPoint(op);
    view.setAxis(0);
    QCOMPARE(view.latencyModel()->fixedValue(), 8);
    view.setAxis(1);
    QCOMPARE(view.latencyModel()->fixedValue(), 4096);
  }

  void seriesTakeTheVariantPaletteAndAMarkerPerMode() {
    ChartsView view;
    view.setCases(RunStore::open_read_only(db_).cases());
    const SweepSeriesModel& model = *view.latencyModel();
    for (const SweepSeries& s : model.series()) {
      auto* line = qobject_cast<QLineSeries*>(seriesNamed(view.latencyChart(), s.name));
      QVERIFY(line);
      // The same colour as the dispatch map gives the variant, in both charts.
      QCOMPARE(line->pen().color(), variantColour(s.variant));
      QCOMPARE(qobject_cast<QLineSeries*>(seriesNamed(view.floorChart(), s.name))->pen().color(),
               variantColour(s.variant));
      QVERIFY(!line->lightMarker().isNull());
    }
    QCOMPARE(markerShapeOf(QStringLiteral("k8v8/transform/full")), MarkerShape::circle);
    QCOMPARE(markerShapeOf(QStringLiteral("k8v8/fp8_qk/k_only/prebias")), MarkerShape::square);
    QCOMPARE(markerShapeOf(QStringLiteral("k8v8/transform/separate_kv")), MarkerShape::triangle);
    QCOMPARE(markerShapeOf(QStringLiteral("k16v16/k16")), MarkerShape::diamond);
  }

  void lowerChartShowsTheChosenFraction() {
    ChartsView view;
    view.setCases(RunStore::open_read_only(db_).cases());
    QCOMPARE(view.floorModel()->metric(), SweepMetric::floor_fraction);
    view.setLowerMetric(1);  // a perfect stream of the same bytes: only cold K8/V8 has it
    QCOMPARE(view.floorModel()->metric(), SweepMetric::stream_fraction);
    QCOMPARE(view.floorChart()->series().size(), 1);
    QVERIFY(view.floorChart()->title().startsWith(QStringLiteral("fraction of a perfect stream")));
    QCOMPARE(view.latencyChart()->series().size(), 6);  // the latency chart is unchanged
    view.setLowerMetric(0);
    QCOMPARE(view.floorChart()->series().size(), 6);
  }
};

QTEST_MAIN(TestChartsView)
#include "test_charts_view.moc"
