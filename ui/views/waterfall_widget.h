#pragma once
// Waterfall of T(K8/V8) − T(K16/V8) for one shape: + unhidden K8 prep,
// + pipeline/occupancy penalty, − extra K16 HBM time = Δ, with the repeats' noise band
// around zero; and a gauge of the V hidden fraction. Custom painted (each step floats from
// the running sum).

#include <optional>
#include <vector>

#include <QFont>
#include <QLineF>
#include <QRectF>
#include <QWidget>

#include "ui/models/break_even_model.h"

namespace tilepath::ui {

// Axis ticks at round values (multiples of 1, 2 or 5 × 10^k) covering [lo, hi] with
// about target intervals: the first tick at or below lo, the last at or above hi.
std::vector<double> waterfallTicks(double lo, double hi, int target = 4);

// Where everything of the waterfall goes, sized from the font: the value range leaves a
// text line above and below the bars, so each value label sits beyond its bar's end
// (above a rise, below a fall) and no text overlaps another text or a bar.
struct WaterfallLayout {
  struct Text {
    QRectF rect;
    QString text;
    int flags = Qt::AlignCenter;
  };
  struct Bar {
    QRectF rect;
    QColor colour;
    bool total = false;
  };
  Text title, noise_warning, unit, gauge_text;  // noise_warning: empty text when the Δ is clear of noise
  QRect plot, gauge;
  std::vector<double> ticks;
  std::vector<double> tick_y;     // the ticks' y in widget pixels
  std::vector<Text> tick_labels;  // a label per tick that has room for one
  double zero_y = 0;
  QRectF noise_band;  // ±noise around zero; empty when the noise is unknown
  std::vector<Bar> bars;
  std::vector<Text> value_labels, category_labels;
  std::vector<QLineF> connectors;
  QString no_decomposition;  // why no bars are drawn; empty when they are
  // Every text with a non-empty string, for drawing and for overlap checks.
  std::vector<const Text*> texts() const;
};
WaterfallLayout layoutWaterfall(const BreakEvenRow& row, QSize size, const QFont& font);

class WaterfallWidget : public QWidget {
  Q_OBJECT
 public:
  explicit WaterfallWidget(QWidget* parent = nullptr);
  void setRow(const std::optional<BreakEvenRow>& row);
  QSize sizeHint() const override { return {700, 360}; }

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  std::optional<BreakEvenRow> row_;
};

}  // namespace tilepath::ui
