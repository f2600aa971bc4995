// The break-even waterfall: ticks at round values (1, 2, 5 × 10^k) covering the data, and
// a layout where no text overlaps another text or a bar, at any size the view gives it.

#include <QFont>
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

  void labelsDoNotCollide_data() {
    QTest::addColumn<double>("prep");
    QTest::addColumn<double>("penalty");
    QTest::addColumn<double>("extra_hbm");
    QTest::addColumn<double>("noise");
    // The bundled H200 sweep's B=64 S=4096 cold row: a zero step, a small one, a large fall.
    QTest::newRow("h200 fp8_qk") << 0.0 << 0.539 << 15.8 << 0.9;
    QTest::newRow("rise then fall") << 15.0 << -14.0 << 0.5 << double(NAN);
    QTest::newRow("all rises") << 3.0 << 2.0 << -1.0 << 0.2;
    QTest::newRow("tiny") << 1e-4 << -2e-4 << 3e-4 << 1e-3;
    QTest::newRow("zero") << 0.0 << 0.0 << 0.0 << 0.0;
  }

  void labelsDoNotCollide() {
    QFETCH(double, prep);
    QFETCH(double, penalty);
    QFETCH(double, extra_hbm);
    QFETCH(double, noise);
    BreakEvenRow row;
    row.backend = "cuda";
    row.op.batch = 64;
    row.op.context = 4096;
    row.k8v8_variant = "k8v8/fp8_qk/k_only";
    row.unit = "us_per_1k_tokens";
    row.decomposition = tilepath::BreakEven{};
    row.decomposition->unhidden_k8_prep_us = prep;
    row.decomposition->pipeline_penalty_us = penalty;
    row.decomposition->extra_k16_hbm_us = extra_hbm;
    row.decomposition->delta_us = prep + penalty - extra_hbm;
    row.noise_us = noise;
    row.v_hidden_fraction = 0.5;
    QFont large;
    large.setPointSizeF(large.pointSizeF() * 1.5);
    // The widget's minimum (400×260) and the sizes the break-even view gives it; a 1.5×
    // font where there is room for its lines.
    const std::pair<QFont, QSize> cases[] = {{QFont(), QSize(400, 260)},  {QFont(), QSize(700, 360)},
                                             {QFont(), QSize(1150, 240)}, {QFont(), QSize(1150, 500)},
                                             {large, QSize(700, 360)},    {large, QSize(1150, 500)}};
    for (const auto& [font, size] : cases) {
      {
        const WaterfallLayout l = layoutWaterfall(row, size, font);
        const std::vector<const WaterfallLayout::Text*> texts = l.texts();
        QCOMPARE(l.value_labels.size(), std::size_t(4));
        QCOMPARE(l.bars.size(), std::size_t(4));
        auto where = [&](const WaterfallLayout::Text* t) {
          return QStringLiteral("'%1' at %2,%3 %4×%5 (%6×%7, %8 pt)")
              .arg(t->text)
              .arg(t->rect.x())
              .arg(t->rect.y())
              .arg(t->rect.width())
              .arg(t->rect.height())
              .arg(size.width())
              .arg(size.height())
              .arg(font.pointSizeF());
        };
        for (std::size_t i = 0; i < texts.size(); ++i) {
          QVERIFY2(QRectF(QPointF(0, 0), size).contains(texts[i]->rect), qPrintable(where(texts[i])));
          for (std::size_t j = i + 1; j < texts.size(); ++j)
            QVERIFY2(!texts[i]->rect.intersects(texts[j]->rect),
                     qPrintable(where(texts[i]) + QStringLiteral(" overlaps ") + where(texts[j])));
        }
        for (const WaterfallLayout::Text& label : l.value_labels)
          for (const WaterfallLayout::Bar& bar : l.bars)
            QVERIFY2(!label.rect.intersects(bar.rect), qPrintable(where(&label) + QStringLiteral(" overlaps a bar")));
        // The Δ within the noise is said above the plot.
        QCOMPARE(!l.noise_warning.text.isEmpty(),
                 std::isfinite(noise) && std::abs(row.decomposition->delta_us) <= noise);
      }
    }
  }
};

QTEST_MAIN(TestWaterfallWidget)
#include "test_waterfall_widget.moc"
