// The break-even waterfall's axis: ticks at round values (1, 2, 5 × 10^k), covering the data.

#include <QtTest>
#include <cmath>

#include "ui/views/waterfall_widget.h"

using namespace tilepath::ui;

class TestWaterfallWidget : public QObject {
  Q_OBJECT
 private slots:
  void ticksAtRoundValues_data() {
    QTest::addColumn<double>("lo");
    QTest::addColumn<double>("hi");
    QTest::newRow("sub-microsecond, both signs") << -0.137 << 0.4123;
    QTest::newRow("positive only") << 0.0 << 7.31;
    QTest::newRow("large negative") << -123.4 << 18.2;
    QTest::newRow("narrow") << 1.2345 << 1.2391;
  }

  void ticksAtRoundValues() {
    QFETCH(double, lo);
    QFETCH(double, hi);
    const std::vector<double> ticks = waterfallTicks(lo, hi, 4);
    QVERIFY2(ticks.size() >= 3 && ticks.size() <= 10, qPrintable(QString::number(ticks.size())));
    QVERIFY(ticks.front() <= lo);
    QVERIFY(ticks.back() >= hi);
    const double step = ticks[1] - ticks[0];
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step)));
    QVERIFY2(qFuzzyCompare(mantissa, 1.0) || qFuzzyCompare(mantissa, 2.0) || qFuzzyCompare(mantissa, 5.0),
             qPrintable(QString::number(step)));
    for (double t : ticks) {
      // Every tick is a whole multiple of the step, and prints short.
      QVERIFY(std::abs(t / step - std::round(t / step)) < 1e-6);
      QVERIFY2(QString::number(t, 'g', 6).size() <= 8, qPrintable(QString::number(t, 'g', 17)));
    }
  }
};

QTEST_MAIN(TestWaterfallWidget)
#include "test_waterfall_widget.moc"
