// The sweep charts: one series per variant and cache state in both charts, the
// shared legend hides/shows a series in both, and the choice survives a re-query;
// the lower chart shows the chosen fraction (byte floor or perfect stream).

#include <QAbstractSeries>
#include <QChart>
#include <QChartView>
#include <QComboBox>
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
#include "ui/views/charts_view_whiskers.h"
#include "ui/views/variant_palette.h"
#include "ui/widget_export.h"

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

  void latencyPointsCarryWhiskersOfTheirRepeats() {
    // Each case's repeats ran from 0.9× to 1.25× of its latency.
    std::vector<CaseSummary> cases = RunStore::open_read_only(db_).cases();
    for (CaseSummary& c : cases) {
      const double latency = *c.record.measurement("latency_us");
      c.record.measurements.push_back({"latency_min_us", 0.9 * latency, "us"});
      c.record.measurements.push_back({"latency_max_us", 1.25 * latency, "us"});
    }
    ChartsView view;
    view.resize(1100, 800);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setCases(cases);
    const ChartWhiskers* whiskers = view.latencyWhiskers();
    QVERIFY(whiskers);
    std::size_t points = 0;
    double highest = 0;
    for (const SweepSeries& s : view.latencyModel()->series()) {
      auto* line = qobject_cast<QXYSeries*>(seriesNamed(view.latencyChart(), s.name));
      const std::vector<Whisker> drawn = whiskers->whiskersOf(line);
      QCOMPARE(drawn.size(), s.points.size());
      for (std::size_t i = 0; i < drawn.size(); ++i) {
        QCOMPARE(drawn[i].x, s.points[i].x());
        QVERIFY(qFuzzyCompare(drawn[i].low, 0.9 * s.points[i].y()));
        QVERIFY(qFuzzyCompare(drawn[i].high, 1.25 * s.points[i].y()));
        highest = std::max(highest, drawn[i].high);
      }
      points += drawn.size();
    }
    QVERIFY(points > 0);
    // Every whisker is drawn, upwards from the fastest repeat, and inside the y range.
    std::vector<QLineF> strokes = whiskers->drawnStrokes();
    QCOMPARE(strokes.size(), points);
    for (const QLineF& stroke : strokes) QVERIFY(stroke.p1().y() > stroke.p2().y());
    QVERIFY(yAxisMax(view.latencyChart()) >= highest);
    // And they reach the screen: the chart differs where they are.
    QChartView* chart_view = nullptr;
    for (QChartView* v : view.findChildren<QChartView*>())
      if (v->chart() == view.latencyChart()) chart_view = v;
    QVERIFY(chart_view);
    const QImage with = renderWidget(*chart_view);
    const_cast<ChartWhiskers*>(whiskers)->setVisible(false);
    const QImage without = renderWidget(*chart_view);
    const_cast<ChartWhiskers*>(whiskers)->setVisible(true);
    int differing = 0;
    for (int y = 0; y < with.height(); ++y)
      for (int x = 0; x < with.width(); ++x) differing += with.pixel(x, y) != without.pixel(x, y);
    QVERIFY2(differing > 100, qPrintable(QStringLiteral("%1 pixels differ").arg(differing)));
    // A hidden series hides its whiskers.
    const SweepSeries& first = view.latencyModel()->series().front();
    view.showOnlySeries(first.name);
    QCOMPARE(whiskers->drawnStrokes().size(), first.points.size());
    // Without stored min/max there is nothing to draw.
    view.setCases(RunStore::open_read_only(db_).cases());
    QVERIFY(whiskers->drawnStrokes().empty());
  }

  void exportHoldsTheChartsAlone() {
    ChartsView view;
    view.resize(1100, 800);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setCases(RunStore::open_read_only(db_).cases());
    const QList<QChartView*> charts = view.findChildren<QChartView*>();
    QCOMPARE(charts.size(), 2);
    const QImage exported = renderForExport(view).convertToFormat(QImage::Format_ARGB32);
    QCOMPARE(exported.size() / exported.devicePixelRatio(), view.exportSize());
    // As tall as the two charts (no control row above them) and narrower than the view
    // with its check-box legend.
    QCOMPARE(view.exportSize().height(), charts[0]->height() + charts[1]->height());
    QVERIFY(view.exportSize().height() < view.height());
    auto* combo = view.findChild<QComboBox*>();
    QVERIFY(combo && combo->isVisible());
    // Its top left is the latency chart, pixel for pixel: no combo box is drawn over it.
    QChartView* latency = charts[0]->chart() == view.latencyChart() ? charts[0] : charts[1];
    const QImage chart = renderWidget(*latency).convertToFormat(QImage::Format_ARGB32);
    QCOMPARE(exported.copy(QRect(QPoint(0, 0), chart.size())), chart);

    QTemporaryDir out;
    QString error;
    const QString png = out.filePath(QStringLiteral("charts.png"));
    QVERIFY2(exportWidget(view, png, &error), qPrintable(error));
    QCOMPARE(QImage(png).size(), exported.size());
    const QString svg = out.filePath(QStringLiteral("charts.svg"));
    QVERIFY2(exportWidget(view, svg, &error), qPrintable(error));
    QFile file(svg);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray text = file.readAll();
    QVERIFY(text.contains(QStringLiteral("viewBox=\"0 0 %1 %2\"")
                              .arg(view.exportSize().width())
                              .arg(view.exportSize().height())
                              .toUtf8()));
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
