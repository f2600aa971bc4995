// The sweep charts: one series per variant and cache state in both charts, the
// shared legend hides/shows a series in both, and the choice survives a re-query;
// the lower chart shows the chosen fraction (byte floor or perfect stream).

#include <QAbstractSeries>
#include <QChart>
#include <QListWidget>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include "fixture_db.h"
#include "ui/models/sweep_series_model.h"
#include "ui/views/charts_view.h"

using namespace tilepath;
using namespace tilepath::ui;

namespace {
QAbstractSeries* seriesNamed(QChart* chart, const QString& name) {
  for (QAbstractSeries* s : chart->series())
    if (s->name() == name) return s;
  return nullptr;
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
