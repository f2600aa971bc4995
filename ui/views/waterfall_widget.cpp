#include "ui/views/waterfall_widget.h"

#include <algorithm>
#include <cmath>

#include <QFontMetricsF>
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

std::vector<const WaterfallLayout::Text*> WaterfallLayout::texts() const {
  std::vector<const Text*> all;
  for (const Text* t : {&title, &noise_warning, &unit, &gauge_text})
    if (!t->text.isEmpty()) all.push_back(t);
  for (const std::vector<Text>* list : {&tick_labels, &value_labels, &category_labels})
    for (const Text& t : *list) all.push_back(&t);
  return all;
}

WaterfallLayout layoutWaterfall(const BreakEvenRow& r, QSize size, const QFont& font) {
  WaterfallLayout l;
  QFont bold = font;
  bold.setBold(true);
  const QFontMetricsF fm(font), fm_bold(bold);
  const double line = std::ceil(fm.height());
  const int width = size.width(), height = size.height();

  // Top: title, the noise warning (when Δ is within the noise), the unit.
  double y = 6;
  const QString title = QObject::tr("%1 (%2): II(K8/V8) − II(K16/V8) in %3, K8/V8 = %4")
                            .arg(breakEvenShapeLabel(r), qs(r.backend), breakEvenUnitLabel(r), qs(r.k8v8_variant));
  l.title = {QRectF(10, y, width - 20, std::ceil(fm_bold.height())),
             fm_bold.elidedText(title, Qt::ElideRight, width - 20), Qt::AlignLeft | Qt::AlignVCenter};
  y = l.title.rect.bottom() + 2;
  const BreakEven* d = r.decomposition ? &*r.decomposition : nullptr;
  if (d && r.withinNoise(d->delta_us)) {
    const QString warning =
        QObject::tr("⚠ Δ %1 is within the repeats' noise ±%2: it cannot be told from run-to-run spread")
            .arg(formatNumber(d->delta_us, 3), formatNumber(r.noise_us, 2));
    l.noise_warning = {QRectF(10, y, width - 20, line), fm.elidedText(warning, Qt::ElideRight, width - 20),
                       Qt::AlignLeft | Qt::AlignVCenter};
    y = l.noise_warning.rect.bottom() + 2;
  }
  l.unit = {QRectF(4, y, fm.horizontalAdvance(breakEvenUnitLabel(r)) + 4, line), breakEvenUnitLabel(r),
            Qt::AlignLeft | Qt::AlignVCenter};
  // The top tick's label reaches half a line above the plot.
  const double plot_top = l.unit.rect.bottom() + line / 2 + 3;

  // Bottom: the gauge and its text, above them the category labels.
  const int gauge_h = 18;
  l.gauge_text = {QRectF(10, height - 6 - gauge_h - 4 - line, width - 20, line),
                  fm.elidedText(std::isfinite(r.v_hidden_fraction)
                                    ? QObject::tr("V hidden fraction %1% (share of the full FP8 delta that V "
                                                  "preparation does not add)")
                                          .arg(QString::number(100 * r.v_hidden_fraction, 'f', 0))
                                    : QObject::tr("V hidden fraction: needs a K16/V16 case at this shape"),
                                Qt::ElideRight, width - 20),
                  Qt::AlignLeft | Qt::AlignVCenter};

  struct Step {
    QString label;
    double delta;
    QColor colour;
    bool total;
  };
  std::vector<Step> steps;
  if (d)
    steps = {{QObject::tr("unhidden K8 prep"), d->unhidden_k8_prep_us, QColor(0xf2, 0x8e, 0x2b), false},
             {QObject::tr("pipeline / occupancy"), d->pipeline_penalty_us, QColor(0xb0, 0x7a, 0xa1), false},
             {QObject::tr("− extra K16 HBM"), -d->extra_k16_hbm_us, QColor(0x4e, 0x79, 0xa7), false},
             {QObject::tr("Δ = K8/V8 − K16/V8"), d->delta_us,
              d->delta_us > 0 ? QColor(0xd6, 0x27, 0x28) : QColor(0x2c, 0xa0, 0x2c), true}};
  // Room for the widest tick label QString::number(v, 'g', 3) writes.
  const int left_guess = std::max(70, int(std::ceil(fm.horizontalAdvance(QStringLiteral("-0.000000")))) + 12);
  const int n = std::max<int>(1, static_cast<int>(steps.size()));
  const double slot = double(width - left_guess - 30) / n;
  // Category labels wrap within their slot; the tallest sets the room below the plot.
  double category_h = line;
  for (const Step& s : steps)
    category_h = std::max(
        category_h,
        fm.boundingRect(QRectF(0, 0, slot - 4, 10 * line), Qt::AlignHCenter | Qt::TextWordWrap, s.label).height());
  const double plot_bottom = l.gauge_text.rect.top() - 6 - std::ceil(category_h) - 4;
  l.gauge = QRect(left_guess, height - 6 - gauge_h, width - left_guess - 30, gauge_h);

  if (!d) {
    l.plot = QRect(QPoint(left_guess, int(plot_top)), QPoint(width - 30, int(plot_bottom)));
    l.no_decomposition = QObject::tr("No decomposition: %1.").arg(qs(r.decomposition_note));
    return l;
  }

  // Range of the running sum and the total.
  double lo = 0, hi = 0, run = 0;
  for (const Step& s : steps) {
    const double end = s.total ? s.delta : run + s.delta;
    if (!s.total) run = end;
    lo = std::min(lo, end);
    hi = std::max(hi, end);
  }
  if (std::isfinite(r.noise_us)) lo = std::min(lo, -r.noise_us), hi = std::max(hi, r.noise_us);
  if (hi - lo < 1e-12) hi = lo + 1;
  // A text line of room beyond the highest and the lowest bar end, for their value labels.
  const double label_room = line + 4;
  const double plot_h = std::max(1.0, plot_bottom - plot_top);
  const double usable = std::max(0.25 * plot_h, plot_h - 2 * label_room);
  const double pad = (hi - lo) * (plot_h - usable) / 2 / usable;
  l.ticks = waterfallTicks(lo - pad, hi + pad);
  lo = l.ticks.front();
  hi = l.ticks.back();

  // Tick labels set the left margin.
  QStringList tick_texts;
  double tick_w = 0;
  for (double& v : l.ticks) {
    if (std::abs(v) < 1e-9 * (hi - lo)) v = 0;  // "0", not "-1.4e-17"
    tick_texts << QString::number(v, 'g', 3);
    tick_w = std::max(tick_w, fm.horizontalAdvance(tick_texts.back()));
  }
  const int left = std::max(left_guess, int(std::ceil(tick_w)) + 12);
  l.plot = QRect(QPoint(left, int(plot_top)), QPoint(width - 30, int(plot_bottom)));
  const QRect& plot = l.plot;
  auto yOf = [&](double v) { return plot.bottom() - (v - lo) / (hi - lo) * plot.height(); };
  l.zero_y = yOf(0);
  if (std::isfinite(r.noise_us) && r.noise_us > 0)
    l.noise_band = QRectF(QPointF(plot.left(), yOf(r.noise_us)), QPointF(plot.right(), yOf(-r.noise_us)));
  // Ticks closer than a line apart get a label every second (third, ...) tick.
  const double tick_gap = l.ticks.size() > 1 ? std::abs(yOf(l.ticks[1]) - yOf(l.ticks[0])) : line;
  const int every = std::max(1, int(std::ceil((line + 2) / std::max(1.0, tick_gap))));
  for (std::size_t i = 0; i < l.ticks.size(); ++i) {
    const double ty = yOf(l.ticks[i]);
    l.tick_y.push_back(ty);
    if (i % every == 0)
      l.tick_labels.push_back(
          {QRectF(0, ty - line / 2, plot.left() - 6, line), tick_texts[int(i)], Qt::AlignRight | Qt::AlignVCenter});
  }

  const double bar_slot = double(plot.width()) / n;
  run = 0;
  for (int i = 0; i < n; ++i) {
    const Step& s = steps[i];
    const double from = s.total ? 0 : run;
    const double to = s.total ? s.delta : run + s.delta;
    const QRectF bar(plot.left() + i * bar_slot + bar_slot * 0.18, std::min(yOf(from), yOf(to)), bar_slot * 0.64,
                     std::max(1.5, std::abs(yOf(to) - yOf(from))));
    l.bars.push_back({bar, s.colour, s.total});
    // The value beyond the bar's end: above a rise (and a zero step), below a fall.
    const QString value = QString::number(s.delta, 'g', 3);
    const double value_w = std::min(bar_slot - 4, fm.horizontalAdvance(value) + 6);
    const double cx = bar.center().x();
    const double label_y = to >= from ? bar.top() - 2 - line : bar.bottom() + 2;
    l.value_labels.push_back({QRectF(cx - value_w / 2, label_y, value_w, line), value, Qt::AlignCenter});
    const QRectF category_rect(plot.left() + i * bar_slot + 2, plot.bottom() + 4, bar_slot - 4, category_h);
    l.category_labels.push_back(
        {fm.boundingRect(category_rect, Qt::AlignHCenter | Qt::AlignTop | Qt::TextWordWrap, s.label), s.label,
         Qt::AlignHCenter | Qt::AlignTop | Qt::TextWordWrap});
    if (!s.total) {
      l.connectors.push_back(QLineF(bar.right(), yOf(to), bar.right() + bar_slot * 0.36, yOf(to)));
      run = to;
    }
  }
  return l;
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
  if (!row_) {
    p.drawText(rect(), Qt::AlignCenter, tr("Select a shape: the K8/V8 − K16/V8 decomposition appears here."));
    return;
  }
  const WaterfallLayout l = layoutWaterfall(*row_, size(), font());
  auto draw = [&](const WaterfallLayout::Text& t) { p.drawText(t.rect, t.flags, t.text); };
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  draw(l.title);
  p.setFont(font());
  if (!l.noise_warning.text.isEmpty()) {
    p.setPen(QColor(0xb3, 0x5c, 0x00));
    draw(l.noise_warning);
  }

  if (!l.no_decomposition.isEmpty()) {
    p.setPen(Qt::black);
    p.drawText(l.plot, Qt::AlignCenter, l.no_decomposition);
  } else {
    // The noise band first: bars and labels stay readable over it.
    if (!l.noise_band.isEmpty()) p.fillRect(l.noise_band, QColor(0xb3, 0x5c, 0x00, 40));
    p.setPen(QColor(200, 200, 200));
    for (double ty : l.tick_y) p.drawLine(QPointF(l.plot.left(), ty), QPointF(l.plot.right(), ty));
    p.setPen(Qt::darkGray);
    for (const auto& t : l.tick_labels) draw(t);
    p.setPen(QPen(Qt::black, 1.2));
    p.drawLine(QPointF(l.plot.left(), l.zero_y), QPointF(l.plot.right(), l.zero_y));
    draw(l.unit);
    for (const auto& bar : l.bars) {
      p.fillRect(bar.rect, bar.colour);
      p.setPen(bar.colour.darker(140));
      p.drawRect(bar.rect);
    }
    p.setPen(QPen(Qt::gray, 1, Qt::DashLine));
    for (const QLineF& c : l.connectors) p.drawLine(c);
    p.setPen(Qt::black);
    for (const auto& t : l.value_labels) draw(t);
    for (const auto& t : l.category_labels) draw(t);
  }

  // V hidden fraction gauge.
  const BreakEvenRow& r = *row_;
  p.setPen(Qt::black);
  draw(l.gauge_text);
  p.fillRect(l.gauge, QColor(235, 235, 235));
  if (std::isfinite(r.v_hidden_fraction))
    p.fillRect(QRect(l.gauge.left(), l.gauge.top(), int(l.gauge.width() * std::clamp(r.v_hidden_fraction, 0.0, 1.0)),
                     l.gauge.height()),
               QColor(0x59, 0xa1, 0x4f));
  p.setPen(Qt::darkGray);
  p.drawRect(l.gauge);
}

}  // namespace tilepath::ui
