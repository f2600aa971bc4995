#include "ui/views/dispatch_map_widget.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>

#include "ui/models/dispatch_model.h"
#include "ui/qt_text.h"
#include "ui/views/variant_palette.h"

namespace tilepath::ui {

namespace {

const QColor kEmptyFill(0xe6, 0xe6, 0xe6);
constexpr double kHoverPixels = 4;

std::vector<double> logEdges(const std::vector<int>& values) {
  std::vector<double> l;
  for (int v : values) l.push_back(std::log2(double(v)));
  if (l.empty()) return {};
  if (l.size() == 1) return {l[0] - 0.5, l[0] + 0.5};
  std::vector<double> edges{l[0] - 0.5 * (l[1] - l[0])};
  for (std::size_t i = 1; i < l.size(); ++i) edges.push_back(0.5 * (l[i - 1] + l[i]));
  edges.push_back(l.back() + 0.5 * (l.back() - l[l.size() - 2]));
  return edges;
}

double distanceToSegment(const QPointF& p, const QLineF& s) {
  const QPointF d = s.p2() - s.p1();
  const double length2 = d.x() * d.x() + d.y() * d.y();
  double t = length2 > 0 ? ((p.x() - s.x1()) * d.x() + (p.y() - s.y1()) * d.y()) / length2 : 0;
  t = std::clamp(t, 0.0, 1.0);
  const QPointF nearest = s.p1() + t * d;
  return std::hypot(p.x() - nearest.x(), p.y() - nearest.y());
}

QString cellNote(const analysis::DispatchCell* cell) {
  if (cell == nullptr) return QStringLiteral("not measured");
  if (cell->winner() == nullptr) return QStringLiteral("all excluded");
  if (cell->runner_up() == nullptr) return QStringLiteral("no runner-up");
  return percentText(cell->margin());
}

}  // namespace

DispatchMapWidget::DispatchMapWidget(QWidget* parent) : QWidget(parent) { setMinimumSize(minimumSizeHint()); }

void DispatchMapWidget::setGroup(std::optional<analysis::DispatchGroup> group) {
  group_ = std::move(group);
  context_edges_ = group_ ? logEdges(group_->contexts) : std::vector<double>{};
  batch_edges_ = group_ ? logEdges(group_->batches) : std::vector<double>{};
  cells_won_.clear();
  if (group_)
    for (const auto& [key, cell] : group_->cells)
      if (cell.winner() != nullptr) ++cells_won_[qs(cell.winner()->variant)];
  update();
}

QStringList DispatchMapWidget::legendVariants() const {
  QStringList names;
  for (const auto& [name, count] : cells_won_) names << name;
  std::stable_sort(names.begin(), names.end(),
                   [&](const QString& a, const QString& b) { return cells_won_.at(a) > cells_won_.at(b); });
  return names;
}

double DispatchMapWidget::legendWidth() const {
  const QFontMetrics fm(font());
  double widest = 0;
  for (const QString& text : {tr("cell text: margin over runner-up"), tr("✕n: n variants excluded by the gate")})
    widest = std::max<double>(widest, fm.horizontalAdvance(text));
  for (const QString& name : legendVariants())
    widest = std::max<double>(widest, 30 + fm.horizontalAdvance(name + QStringLiteral(" (000)")));
  return std::clamp(widest + 8, 160.0, 360.0);
}

QRectF DispatchMapWidget::plotRect() const {
  const QFontMetrics fm(font());
  double label = fm.horizontalAdvance(QStringLiteral("B=0000"));
  const double left = fm.height() + 8 + label + 8;  // rotated axis title, batch labels
  const double bottom = 2 * fm.height() + 14;       // context labels, axis title
  return QRectF(left, 8, std::max(40.0, width() - left - legendWidth() - 24), std::max(40.0, height() - 8 - bottom));
}

double DispatchMapWidget::xOf(double context) const {
  const QRectF plot = plotRect();
  if (context_edges_.size() < 2 || !(context > 0)) return plot.left();
  const double lo = context_edges_.front(), hi = context_edges_.back();
  return plot.left() + (std::log2(context) - lo) / (hi - lo) * plot.width();
}

double DispatchMapWidget::yOf(double batch) const {
  const QRectF plot = plotRect();
  if (batch_edges_.size() < 2 || !(batch > 0)) return plot.top();
  const double lo = batch_edges_.front(), hi = batch_edges_.back();
  return plot.top() + (std::log2(batch) - lo) / (hi - lo) * plot.height();
}

int DispatchMapWidget::columnOf(int context) const {
  if (!group_) return -1;
  auto it = std::find(group_->contexts.begin(), group_->contexts.end(), context);
  return it == group_->contexts.end() ? -1 : static_cast<int>(it - group_->contexts.begin());
}

int DispatchMapWidget::rowOf(int batch) const {
  if (!group_) return -1;
  auto it = std::find(group_->batches.begin(), group_->batches.end(), batch);
  return it == group_->batches.end() ? -1 : static_cast<int>(it - group_->batches.begin());
}

QRectF DispatchMapWidget::cellRect(int batch, int context) const {
  const int column = columnOf(context), row = rowOf(batch);
  if (column < 0 || row < 0) return {};
  const double x0 = xOf(std::exp2(context_edges_[column])), x1 = xOf(std::exp2(context_edges_[column + 1]));
  const double y0 = yOf(std::exp2(batch_edges_[row])), y1 = yOf(std::exp2(batch_edges_[row + 1]));
  return QRectF(QPointF(x0, y0), QPointF(x1, y1));
}

QString DispatchMapWidget::winnerAt(int batch, int context) const {
  const analysis::DispatchCell* cell = group_ ? group_->cell(batch, context) : nullptr;
  return cell && cell->winner() ? qs(cell->winner()->variant) : QString();
}

QColor DispatchMapWidget::fillAt(int batch, int context) const {
  const QString winner = winnerAt(batch, context);
  return winner.isEmpty() ? kEmptyFill : variantColour(winner);
}

QString DispatchMapWidget::marginTextAt(int batch, int context) const {
  return group_ ? cellNote(group_->cell(batch, context)) : QString();
}

std::vector<DispatchMapWidget::CrossoverLine> DispatchMapWidget::crossoverLines() const {
  std::vector<CrossoverLine> lines;
  if (!group_) return lines;
  for (const analysis::Crossover& x : group_->crossovers) {
    if (!(x.at > 0)) continue;
    if (x.axis == "context") {
      const int row = rowOf(x.held);
      if (row < 0 || group_->contexts.empty()) continue;
      const QRectF band = cellRect(x.held, group_->contexts.front()).united(cellRect(x.held, group_->contexts.back()));
      const double at = xOf(x.at);
      lines.push_back({QLineF(at, band.top() + 2, at, band.bottom() - 2), x});
    } else if (x.axis == "batch") {
      const int column = columnOf(x.held);
      if (column < 0 || group_->batches.empty()) continue;
      const QRectF band = cellRect(group_->batches.front(), x.held).united(cellRect(group_->batches.back(), x.held));
      const double at = yOf(x.at);
      lines.push_back({QLineF(band.left() + 2, at, band.right() - 2, at), x});
    }
  }
  return lines;
}

QString DispatchMapWidget::cellToolTip(int batch, int context) const {
  const analysis::DispatchCell* cell = group_ ? group_->cell(batch, context) : nullptr;
  return cell ? dispatchCellText(*group_, *cell) : QString();
}

QString DispatchMapWidget::toolTipAt(const QPointF& pos) const {
  if (!group_) return {};
  const CrossoverLine* nearest = nullptr;
  double best = kHoverPixels;
  const std::vector<CrossoverLine> lines = crossoverLines();
  for (const CrossoverLine& l : lines)
    if (const double d = distanceToSegment(pos, l.line); d <= best) best = d, nearest = &l;
  if (nearest != nullptr) return crossoverText(nearest->crossover);
  for (int batch : group_->batches)
    for (int context : group_->contexts)
      if (cellRect(batch, context).contains(pos)) {
        const QString text = cellToolTip(batch, context);
        return text.isEmpty() ? tr("B=%1, S=%2: not measured").arg(batch).arg(context) : text;
      }
  return {};
}

bool DispatchMapWidget::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const QString text = toolTipAt(help->pos());
    if (text.isEmpty())
      QToolTip::hideText();
    else
      QToolTip::showText(help->globalPos(), text, this);
    return true;
  }
  return QWidget::event(event);
}

void DispatchMapWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.fillRect(rect(), Qt::white);
  if (!group_ || group_->cells.empty()) {
    p.drawText(rect(), Qt::AlignCenter,
               tr("No measured points to dispatch between: the database has no ok case with a latency."));
    return;
  }
  const analysis::DispatchGroup& g = *group_;
  const QFontMetrics fm(font());
  QFont bold = font();
  bold.setBold(true);
  QFont small = font();
  small.setPointSizeF(font().pointSizeF() * 0.85);
  bool any_excluded = false, any_empty = false;

  // Cells: the winner's colour.
  for (int batch : g.batches)
    for (int context : g.contexts) {
      const QRectF r = cellRect(batch, context);
      const analysis::DispatchCell* cell = g.cell(batch, context);
      p.fillRect(r, fillAt(batch, context));
      if (cell == nullptr || cell->winner() == nullptr) {
        any_empty = true;
        p.fillRect(r, QBrush(QColor(0xa0, 0xa0, 0xa0), Qt::BDiagPattern));
      }
      p.setPen(QPen(Qt::white, 1.5));
      p.setBrush(Qt::NoBrush);
      p.drawRect(r);
    }

  // Crossovers: a white halo keeps the black line visible on every fill.
  for (const CrossoverLine& l : crossoverLines()) {
    p.setPen(QPen(QColor(255, 255, 255, 230), 5, Qt::SolidLine, Qt::RoundCap));
    p.drawLine(l.line);
    p.setPen(QPen(Qt::black, 2, Qt::SolidLine, Qt::RoundCap));
    p.drawLine(l.line);
  }

  // Margins and exclusion marks over the lines, on a patch of the cell's fill so both read.
  const QFontMetrics bold_fm(bold), small_fm(small);
  for (int batch : g.batches)
    for (int context : g.contexts) {
      const QRectF r = cellRect(batch, context);
      const analysis::DispatchCell* cell = g.cell(batch, context);
      const QColor fill = fillAt(batch, context);
      const QString note = cellNote(cell);
      const double w = bold_fm.horizontalAdvance(note) + 8;
      if (w <= r.width()) {
        const QRectF patch(r.center().x() - w / 2, r.center().y() - bold_fm.height() / 2.0, w, bold_fm.height());
        p.setPen(Qt::NoPen);
        p.setBrush(fill);
        p.drawRoundedRect(patch, 3, 3);
        p.setFont(bold);
        p.setPen(cell && cell->winner() ? textColourOn(fill) : QColor(0x40, 0x40, 0x40));
        p.drawText(patch, Qt::AlignCenter, note);
      }
      if (cell != nullptr && !cell->excluded.empty()) {
        any_excluded = true;
        const QString mark = QStringLiteral("✕%1").arg(cell->excluded.size());
        const double mw = small_fm.horizontalAdvance(mark) + 6;
        const QRectF box(r.right() - mw - 3, r.top() + 3, mw, small_fm.height());
        p.setPen(Qt::NoPen);
        p.setBrush(QColor(255, 255, 255, 230));
        p.drawRoundedRect(box, 3, 3);
        p.setFont(small);
        p.setPen(QColor(0xa0, 0x00, 0x00));
        p.drawText(box, Qt::AlignCenter, mark);
      }
    }
  p.setBrush(Qt::NoBrush);

  // Axes: a label per measured value, skipped where it would overlap its neighbour.
  const QRectF plot = plotRect();
  p.setFont(font());
  p.setPen(Qt::black);
  // Labels sit at the middle of their cells (the geometric midpoints bound the cells).
  double last_right = -1e9;
  for (int context : g.contexts) {
    const QString label = QString::number(context);
    const double w = fm.horizontalAdvance(label);
    const double x = cellRect(g.batches.front(), context).center().x();
    if (x - w / 2 < last_right + 6) continue;
    p.drawText(QRectF(x - w / 2 - 2, plot.bottom() + 4, w + 4, fm.height()), Qt::AlignCenter, label);
    last_right = x + w / 2;
  }
  p.drawText(QRectF(plot.left(), plot.bottom() + 6 + fm.height(), plot.width(), fm.height() + 4), Qt::AlignCenter,
             tr("context S (tokens per request, log scale)"));
  double last_bottom = -1e9;
  for (int batch : g.batches) {
    const double y = cellRect(batch, g.contexts.front()).center().y();
    if (y - fm.height() / 2.0 < last_bottom + 2) continue;
    p.drawText(QRectF(0, y - fm.height() / 2.0, plot.left() - 8, fm.height()), Qt::AlignRight | Qt::AlignVCenter,
               QStringLiteral("B=%1").arg(batch));
    last_bottom = y + fm.height() / 2.0;
  }
  p.save();
  p.translate(4 + fm.height() / 2.0, plot.center().y());
  p.rotate(-90);
  p.drawText(QRectF(-plot.height() / 2, -fm.height() / 2.0, plot.height(), fm.height() + 2), Qt::AlignCenter,
             tr("batch B (log scale)"));
  p.restore();

  // Legend: every winning variant, then what the marks mean.
  const double lx = plot.right() + 20;
  double ly = plot.top();
  const double row_h = fm.height() + 6;
  p.setFont(bold);
  p.drawText(QPointF(lx, ly + fm.ascent()), tr("winner (cells won)"));
  ly += row_h;
  p.setFont(font());
  for (const QString& name : legendVariants()) {
    p.fillRect(QRectF(lx, ly + 1, 22, fm.height() - 2), variantColour(name));
    p.setPen(Qt::black);
    p.drawText(QPointF(lx + 30, ly + fm.ascent()), QStringLiteral("%1 (%2)").arg(name).arg(cells_won_.at(name)));
    ly += row_h;
  }
  ly += row_h / 2;
  p.setPen(QPen(Qt::black, 2));
  p.drawLine(QPointF(lx + 11, ly), QPointF(lx + 11, ly + fm.height()));
  p.drawText(QPointF(lx + 30, ly + fm.ascent()), tr("crossover (interpolated)"));
  ly += row_h;
  p.drawText(QPointF(lx, ly + fm.ascent()), tr("cell text: margin over runner-up"));
  ly += row_h;
  if (any_excluded) {
    p.setPen(QColor(0xa0, 0x00, 0x00));
    p.drawText(QPointF(lx, ly + fm.ascent()), tr("✕n: n variants excluded by the gate"));
    ly += row_h;
  }
  if (any_empty) {
    const QRectF swatch(lx, ly + 1, 22, fm.height() - 2);
    p.fillRect(swatch, kEmptyFill);
    p.fillRect(swatch, QBrush(QColor(0xa0, 0xa0, 0xa0), Qt::BDiagPattern));
    p.setPen(Qt::black);
    p.drawText(QPointF(lx + 30, ly + fm.ascent()), tr("no admitted variant (hatched)"));
  }
}

}  // namespace tilepath::ui
