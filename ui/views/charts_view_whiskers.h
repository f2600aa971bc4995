#pragma once
// The repeats' spread of each chart point as an error bar (a whisker from the fastest to
// the slowest repeat, with caps), drawn over a QChart for each of its visible line series.
// QtCharts has no error-bar series, and one line series per whisker would flood the chart.

#include <vector>

#include <QGraphicsObject>
#include <QLineF>

class QChart;
class QXYSeries;

namespace tilepath::ui {

struct Whisker {
  double x, low, high;  // in the series' values
};

class ChartWhiskers : public QGraphicsObject {
  Q_OBJECT
 public:
  explicit ChartWhiskers(QChart* chart);
  // The whiskers of series (replacing any it had); points with a non-finite low or high
  // are left out. The series must belong to the chart.
  void setWhiskers(QXYSeries* series, std::vector<Whisker> whiskers);
  void clear();
  // What of series is drawn, in its values; empty for a series with none.
  std::vector<Whisker> whiskersOf(const QXYSeries* series) const;
  // The vertical strokes drawn now (chart coordinates): one per whisker of a visible series.
  std::vector<QLineF> drawnStrokes() const;

  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  struct SeriesWhiskers {
    QXYSeries* series;
    std::vector<Whisker> whiskers;
  };
  QChart* chart_;
  std::vector<SeriesWhiskers> entries_;
};

}  // namespace tilepath::ui
