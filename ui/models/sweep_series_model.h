#pragma once
// Sweep results as chart series: latency or a floor fraction against context (at
// a fixed batch) or against batch (at a fixed context), one series per
// backend × variant (dtype/path/mode, and mma where the chart holds both families) ×
// cache state. One row per point.

#include <map>
#include <memory>
#include <vector>

#include <QAbstractTableModel>
#include <QPointF>
#include <QStringList>

#include "core/store/run_store.h"

namespace tilepath::ui {

enum class SweepAxis { context, batch };
// floor_fraction: floor / latency; stream_fraction: a perfect stream of the same bytes
// (the read kernel over them, same timing) / latency, where the backend measured one.
enum class SweepMetric { latency_us, floor_fraction, stream_fraction };

struct SweepSeries {
  QString name;  // "sim k8v8/transform/full cold"
  QString backend, variant;
  bool warm = false;
  std::vector<QPointF> points;  // sorted by x
  // The latency chart's spread of each point over its repeats (latency_min_us,
  // latency_max_us), parallel to points; NaN where the case did not store it.
  std::vector<double> low, high;
};

// The hover text of point i of s: series, x, y, and for latency the min–max spread of the
// repeats (the whiskers) where the case stored it.
QString sweepPointToolTip(const SweepSeries& s, std::size_t i, SweepAxis axis, SweepMetric metric);

// The backends of cases, sorted.
QStringList sweepBackends(const std::vector<CaseSummary>& cases);
// How many usable cases (status ok, of backend; "" = all) hold each value of the held
// dimension: batch for axis=context, context for axis=batch.
std::map<int, int> sweepHeldValueCounts(const std::vector<CaseSummary>& cases, SweepAxis axis, const QString& backend);

class SweepSeriesModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { SeriesName, Backend, Variant, Cache, X, Y, CaseId, ColumnCount };

  explicit SweepSeriesModel(QObject* parent = nullptr);
  void setCases(std::vector<CaseSummary> cases);
  void setSharedCases(std::shared_ptr<const std::vector<CaseSummary>> cases);
  // fixedValue: the batch (axis=context) or context (axis=batch) to hold; -1 = the
  // most common one. backend "" = all backends.
  void setQuery(SweepAxis axis, SweepMetric metric, int fixedValue = -1, const QString& backend = {});
  // Both at once: one pass over the cases instead of two.
  void setSharedCases(std::shared_ptr<const std::vector<CaseSummary>> cases, SweepAxis axis, SweepMetric metric,
                      int fixedValue, const QString& backend);

  SweepAxis axis() const { return axis_; }
  SweepMetric metric() const { return metric_; }
  int fixedValue() const { return fixed_effective_; }
  QList<int> fixedValues() const;  // distinct values of the held dimension
  QStringList backends() const;
  const std::vector<SweepSeries>& series() const { return series_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  struct Point {
    int series;
    double x, y;
    qint64 case_id;
  };
  // Shared with the session and the other views: 100k cases are held once.
  std::shared_ptr<const std::vector<CaseSummary>> cases_ = std::make_shared<const std::vector<CaseSummary>>();
  SweepAxis axis_ = SweepAxis::context;
  SweepMetric metric_ = SweepMetric::latency_us;
  int fixed_requested_ = -1, fixed_effective_ = -1;
  QString backend_;
  std::vector<SweepSeries> series_;
  std::vector<Point> points_;
  void rebuild();
};

}  // namespace tilepath::ui
