#include "ui/views/charts_view_whiskers.h"

#include <cmath>

#include <QChart>
#include <QPainter>
#include <QXYSeries>

namespace tilepath::ui {

namespace {
constexpr double kCapHalfWidth = 4;  // px
}

ChartWhiskers::ChartWhiskers(QChart* chart) : QGraphicsObject(chart), chart_(chart) {
  setZValue(100);  // above the series' lines and markers
  connect(chart, &QChart::plotAreaChanged, this, [this] {
    prepareGeometryChange();
    update();
  });
}

void ChartWhiskers::setWhiskers(QXYSeries* series, std::vector<Whisker> whiskers) {
  std::erase_if(whiskers, [](const Whisker& w) { return !std::isfinite(w.low) || !std::isfinite(w.high); });
  std::erase_if(entries_, [series](const SeriesWhiskers& e) { return e.series == series; });
  disconnect(series, nullptr, this, nullptr);
  if (!whiskers.empty()) {
    entries_.push_back({series, std::move(whiskers)});
    // Hiding a series (the legend) hides its whiskers; a series deleted with the chart's
    // rebuild takes its whiskers along.
    connect(series, &QXYSeries::visibleChanged, this, [this] { update(); });
    connect(series, &QObject::destroyed, this, [this, series] {
      std::erase_if(entries_, [series](const SeriesWhiskers& e) { return e.series == series; });
      update();
    });
  }
  update();
}

void ChartWhiskers::clear() {
  entries_.clear();
  update();
}

std::vector<Whisker> ChartWhiskers::whiskersOf(const QXYSeries* series) const {
  for (const SeriesWhiskers& e : entries_)
    if (e.series == series) return e.whiskers;
  return {};
}

std::vector<QLineF> ChartWhiskers::drawnStrokes() const {
  std::vector<QLineF> strokes;
  for (const SeriesWhiskers& e : entries_) {
    if (!e.series->isVisible()) continue;
    for (const Whisker& w : e.whiskers)
      strokes.emplace_back(chart_->mapToPosition(QPointF(w.x, w.low), e.series),
                           chart_->mapToPosition(QPointF(w.x, w.high), e.series));
  }
  return strokes;
}

QRectF ChartWhiskers::boundingRect() const { return chart_->plotArea(); }

void ChartWhiskers::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  painter->save();
  painter->setClipRect(chart_->plotArea());
  painter->setRenderHint(QPainter::Antialiasing);
  for (const SeriesWhiskers& e : entries_) {
    if (!e.series->isVisible()) continue;
    QPen pen(e.series->pen().color(), 1.3);
    painter->setPen(pen);
    for (const Whisker& w : e.whiskers) {
      const QPointF low = chart_->mapToPosition(QPointF(w.x, w.low), e.series);
      const QPointF high = chart_->mapToPosition(QPointF(w.x, w.high), e.series);
      painter->drawLine(low, high);
      painter->drawLine(QPointF(low.x() - kCapHalfWidth, low.y()), QPointF(low.x() + kCapHalfWidth, low.y()));
      painter->drawLine(QPointF(high.x() - kCapHalfWidth, high.y()), QPointF(high.x() + kCapHalfWidth, high.y()));
    }
  }
  painter->restore();
}

}  // namespace tilepath::ui
