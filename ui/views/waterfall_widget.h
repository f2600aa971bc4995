#pragma once
// Waterfall of T(K8/V8) − T(K16/V8) for one shape: + unhidden K8 prep,
// + pipeline/occupancy penalty, − extra K16 HBM time = Δ; and a gauge of the V
// hidden fraction. Custom painted (each step floats from the running sum).

#include <optional>
#include <vector>

#include <QWidget>

#include "ui/models/break_even_model.h"

namespace tilepath::ui {

// Axis ticks at round values (multiples of 1, 2 or 5 × 10^k) covering [lo, hi] with
// about target intervals: the first tick at or below lo, the last at or above hi.
std::vector<double> waterfallTicks(double lo, double hi, int target = 4);

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
