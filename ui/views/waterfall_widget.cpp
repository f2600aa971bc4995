#include "ui/views/waterfall_widget.h"

#include <algorithm>
#include <cmath>

#include <QPainter>

#include "ui/qt_text.h"

namespace tilepath::ui {

std::vector<double> waterfallTicks(double lo, double hi, int target) {
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return {};
  const double raw = (hi - lo) / std::max(1, target);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * magnitude;
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * magnitude) {
      step = m * magnitude;
      break;
    }
  std::vector<double> ticks;
  const long first = std::lround(std::floor(lo / step)), last = std::lround(std::ceil(hi / step));
  // A multiple of step, not a running sum: 0.30000000000000004 would print as such.
  for (long k = first; k <= last; ++k) ticks.push_back(k * step);
  return ticks;
}

WaterfallWidget::WaterfallWidget(QWidget* parent) : QWidget(parent) { setMinimumSize(400, 260); }

void WaterfallWidget::setRow(const std::optional<BreakEvenRow>& row) {
  row_ = row;
  update();
}

void WaterfallWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.fillRect(rect(), Qt::white);
  QFont title_font = font();
  title_font.setBold(true);
  if (!row_) {
    p.drawText(rect(), Qt::AlignCenter, tr("Select a shape: the K8/V8 − K16/V8 decomposition appears here."));
    return;
  }
  const BreakEvenRow& r = *row_;
  p.setFont(title_font);
  p.drawText(QRect(10, 6, width() - 20, 20), Qt::AlignLeft,
             tr("%1 (%2): II(K8/V8) − II(K16/V8) in %3, K8/V8 = %4")
                 .arg(breakEvenShapeLabel(r), qs(r.backend), breakEvenUnitLabel(r), qs(r.k8v8_variant)));
  p.setFont(font());

  const int gauge_h = 54;
  // The unit sits between the title and the plot, clear of the top tick's label.
  QRect plot(70, 50, width() - 100, height() - 50 - 40 - gauge_h);
  if (!r.decomposition) {
    p.drawText(plot, Qt::AlignCenter, tr("No decomposition: %1.").arg(qs(r.decomposition_note)));
  } else {
    const BreakEven& d = *r.decomposition;
    struct Step {
      QString label;
      double delta;
      QColor colour;
      bool total;
    };
    const Step steps[] = {{tr("unhidden K8 prep"), d.unhidden_k8_prep_us, QColor(0xf2, 0x8e, 0x2b), false},
                          {tr("pipeline / occupancy"), d.pipeline_penalty_us, QColor(0xb0, 0x7a, 0xa1), false},
                          {tr("− extra K16 HBM"), -d.extra_k16_hbm_us, QColor(0x4e, 0x79, 0xa7), false},
                          {tr("Δ = K8/V8 − K16/V8"), d.delta_us,
                           d.delta_us > 0 ? QColor(0xd6, 0x27, 0x28) : QColor(0x2c, 0xa0, 0x2c), true}};
    // Range of the running sum.
    double lo = 0, hi = 0, run = 0;
    for (const Step& s : steps) {
      if (s.total) {
        lo = std::min(lo, s.delta);
        hi = std::max(hi, s.delta);
        continue;
      }
      run += s.delta;
      lo = std::min(lo, run);
      hi = std::max(hi, run);
    }
    if (hi - lo < 1e-12) hi = lo + 1;
    const double pad = 0.08 * (hi - lo);
    // The axis runs from one round tick to another.
    const std::vector<double> ticks = waterfallTicks(lo - pad, hi + pad);
    lo = ticks.front();
    hi = ticks.back();
    auto yOf = [&](double v) { return plot.bottom() - (v - lo) / (hi - lo) * plot.height(); };

    // Axis with zero line.
    p.setPen(QColor(200, 200, 200));
    for (double v : ticks) {
      if (std::abs(v) < 1e-9 * (hi - lo)) v = 0;  // "0", not "-1.4e-17"
      p.drawLine(plot.left(), int(yOf(v)), plot.right(), int(yOf(v)));
      p.setPen(Qt::darkGray);
      p.drawText(QRect(0, int(yOf(v)) - 8, plot.left() - 6, 16), Qt::AlignRight | Qt::AlignVCenter,
                 QString::number(v, 'g', 3));
      p.setPen(QColor(200, 200, 200));
    }
    p.setPen(QPen(Qt::black, 1.2));
    p.drawLine(plot.left(), int(yOf(0)), plot.right(), int(yOf(0)));
    p.drawText(QRect(4, plot.top() - 22, 200, 14), Qt::AlignLeft, breakEvenUnitLabel(r));

    const int n = static_cast<int>(std::size(steps));
    const double slot = double(plot.width()) / n;
    run = 0;
    for (int i = 0; i < n; ++i) {
      const Step& s = steps[i];
      double from = s.total ? 0 : run;
      double to = s.total ? s.delta : run + s.delta;
      QRectF bar(plot.left() + i * slot + slot * 0.18, std::min(yOf(from), yOf(to)), slot * 0.64,
                 std::max(1.5, std::abs(yOf(to) - yOf(from))));
      p.fillRect(bar, s.colour);
      p.setPen(s.colour.darker(140));
      p.drawRect(bar);
      p.setPen(Qt::black);
      p.drawText(QRectF(bar.left() - 10, bar.top() - 18, bar.width() + 20, 16), Qt::AlignCenter,
                 QString::number(s.total ? s.delta : s.delta, 'g', 3));
      p.drawText(QRectF(plot.left() + i * slot, plot.bottom() + 4, slot, 32), Qt::AlignHCenter | Qt::TextWordWrap,
                 s.label);
      if (!s.total) {
        // Connector to the next step's start.
        p.setPen(QPen(Qt::gray, 1, Qt::DashLine));
        p.drawLine(QPointF(bar.right(), yOf(to)), QPointF(bar.right() + slot * 0.36, yOf(to)));
        run = to;
      }
    }
  }

  // V hidden fraction gauge.
  QRect gauge(70, height() - gauge_h + 16, width() - 100, 18);
  p.setPen(Qt::black);
  p.drawText(QRect(10, height() - gauge_h - 2, width() - 20, 16), Qt::AlignLeft,
             std::isfinite(r.v_hidden_fraction)
                 ? tr("V hidden fraction %1% (share of the full FP8 delta that V preparation does not add)")
                       .arg(QString::number(100 * r.v_hidden_fraction, 'f', 0))
                 : tr("V hidden fraction: needs a K16/V16 case at this shape"));
  p.fillRect(gauge, QColor(235, 235, 235));
  if (std::isfinite(r.v_hidden_fraction))
    p.fillRect(QRect(gauge.left(), gauge.top(), int(gauge.width() * std::clamp(r.v_hidden_fraction, 0.0, 1.0)),
                     gauge.height()),
               QColor(0x59, 0xa1, 0x4f));
  p.setPen(Qt::darkGray);
  p.drawRect(gauge);
}

}  // namespace tilepath::ui
