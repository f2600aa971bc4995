#pragma once
// Sweep charts (QtCharts): latency and, below it, the fraction of the byte floor or
// of a perfect stream of the same bytes, against context (at a held batch) or against
// batch (at a held context), one series per variant and cache state (warm solid,
// cold dashed), log2 x axis, the latency points with whiskers from the fastest to the
// slowest repeat. One legend beside both charts: unticking an entry hides
// that series in both.

#include <memory>
#include <optional>
#include <set>
#include <vector>

#include <QWidget>

#include "core/store/run_store.h"
#include "ui/widget_export.h"

class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QListWidget;

namespace tilepath::ui {

class ChartWhiskers;
class SweepSeriesModel;

// A series' point marker by its variant's path/mode: full ●, k_only ■, separate_kv ▲,
// anything without a mode ◆ (hollow for a pre-biased K).
enum class MarkerShape { circle, square, triangle, diamond };
MarkerShape markerShapeOf(const QString& variant);

// Exported (ExportableView) as the two charts and a legend of the visible series, without
// the controls, check boxes and scroll bars around them.
class ChartsView : public QWidget, public ExportableView {
  Q_OBJECT
 public:
  explicit ChartsView(QWidget* parent = nullptr);
  QSize exportSize() const override;
  void renderExport(QPainter& painter) override;
  SweepSeriesModel* latencyModel() const { return latency_model_; }
  SweepSeriesModel* floorModel() const { return floor_model_; }
  QChart* latencyChart() const { return latency_chart_; }
  QChart* floorChart() const { return floor_chart_; }
  // The latency chart's whiskers: the min–max of each point's repeats.
  const ChartWhiskers* latencyWhiskers() const { return latency_whiskers_; }

 public slots:
  void setCases(const std::vector<tilepath::CaseSummary>& cases);
  // Shared with the session: the list is not copied.
  void setSharedCases(std::shared_ptr<const std::vector<tilepath::CaseSummary>> cases);
  void setAxis(int axisIndex);           // 0 context, 1 batch
  void setLowerMetric(int metricIndex);  // 0 fraction of the byte floor, 1 of a perfect stream
  // The legend's bulk actions (its buttons and context menu): every series hidden, every
  // series shown, or the one named series alone. Hidden names stay hidden across filters.
  void hideAllSeries();
  void showAllSeries();
  void showOnlySeries(const QString& name);
  // The operating-point editor's point: the held batch (context axis) or held context
  // (batch axis) becomes op's whenever the sweep has that value.
  void followOperatingPoint(const tilepath::OperatingPoint& op);

 private:
  std::shared_ptr<const std::vector<CaseSummary>> cases_ = std::make_shared<const std::vector<CaseSummary>>();
  SweepSeriesModel *latency_model_, *floor_model_;
  QChart *latency_chart_, *floor_chart_;
  QChartView *latency_view_, *floor_view_;
  ChartWhiskers *latency_whiskers_, *floor_whiskers_;
  QComboBox *axis_, *fixed_, *backend_, *lower_metric_;
  QLabel* fixed_label_;
  QListWidget* legend_;       // shared by both charts: one checkable entry per series
  std::set<QString> hidden_;  // series names the user unchecked (kept across filters)
  bool updating_ = false;
  bool backend_chosen_ = false;             // the user picked a backend; otherwise prefer GPU data
  std::optional<OperatingPoint> followed_;  // the editor's point, whose batch/context is held

  void requery();
  void setSeriesVisible(const QString& name, bool visible);
  void rebuildLegend();
  void refillFilters();
  void rebuildChart(QChart* chart, ChartWhiskers* whiskers, const SweepSeriesModel& model, const QString& yTitle,
                    bool logY);
  QSize exportLegendSize() const;
  void applyVisibility();  // series visibility from hidden_, legend ticks, then the y ranges
  void rescaleY(QChart* chart, const SweepSeriesModel& model, bool logY);
};

}  // namespace tilepath::ui
