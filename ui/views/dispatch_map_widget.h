#pragma once
// The dispatch map of one group: rows = measured batches, columns = measured contexts,
// both on log axes (each cell spans to the geometric midpoints with its neighbours, the
// ranges core's dispatch table uses). Each cell is filled with its winner's colour
// (variant_palette.h) and shows the winner's margin over the runner-up; crossovers are
// drawn where core interpolated them: along context as a vertical segment inside its
// batch's row, along batch as a horizontal segment inside its context's column. Cells where
// the gate excluded variants carry "✕n"; cells without an admitted variant are hatched.
// Hovering a cell or a crossover shows what it rests on. Custom painted.

#include <map>
#include <optional>
#include <vector>

#include <QLineF>
#include <QWidget>

#include "core/analysis/dispatch.h"

namespace tilepath::ui {

class DispatchMapWidget : public QWidget {
  Q_OBJECT
 public:
  explicit DispatchMapWidget(QWidget* parent = nullptr);
  void setGroup(std::optional<analysis::DispatchGroup> group);
  const analysis::DispatchGroup* group() const { return group_ ? &*group_ : nullptr; }

  // What is drawn, at the widget's current size.
  QString winnerAt(int batch, int context) const;  // "" when the point has no admitted variant
  QColor fillAt(int batch, int context) const;     // the winner's colour, or the empty-cell fill
  QString marginTextAt(int batch, int context) const;
  QRectF cellRect(int batch, int context) const;  // empty when the point is not on the grid
  QStringList legendVariants() const;             // the winners, most cells won first
  struct CrossoverLine {
    QLineF line;
    analysis::Crossover crossover;
  };
  std::vector<CrossoverLine> crossoverLines() const;
  int crossoverLineCount() const { return static_cast<int>(crossoverLines().size()); }
  QString cellToolTip(int batch, int context) const;  // "" when the point is not measured
  // The hover text at a position: a crossover within a few pixels, else the cell under it.
  QString toolTipAt(const QPointF& pos) const;

  QSize sizeHint() const override { return {860, 440}; }
  QSize minimumSizeHint() const override { return {480, 260}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;

 private:
  std::optional<analysis::DispatchGroup> group_;
  // log2 of the cell edges: the geometric midpoints between measured values, and half
  // a neighbouring step beyond the first and the last.
  std::vector<double> context_edges_, batch_edges_;
  std::map<QString, int> cells_won_;  // per winning variant, the cells it wins

  QRectF plotRect() const;
  double legendWidth() const;
  double xOf(double context) const;  // context in tokens
  double yOf(double batch) const;
  int columnOf(int context) const;  // -1 when not measured
  int rowOf(int batch) const;
};

}  // namespace tilepath::ui
