#pragma once
// Gate view: the stored numerical-gate results (core/analysis/gate_table.h, written by
// `tilepath gate --db`). A table of representation × key distribution, each cell green
// (pass) or red (fail) with the worst rel_l2 and KL of the largest context's case and
// every metric on hover; a metric chooser; under it, for the representation of the
// clicked cell, the metric against context per distribution (log2 context, the threshold
// dashed) and, when the representation has a run with decode steps, the metric against
// step. Without gate results it says how to make some.

#include <vector>

#include <QColor>
#include <QString>
#include <QWidget>

#include "core/analysis/gate_table.h"
#include "core/store/run_store.h"

class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QLogValueAxis;
class QStackedWidget;
class QTableView;
class QValueAxis;

namespace tilepath::ui {

class GateModel;

// One fixed colour per shipped key distribution; any other (an imported dump) takes
// variantColour() of its name.
QColor gateDistributionColour(const QString& distribution);

class GateView : public QWidget {
  Q_OBJECT
 public:
  explicit GateView(QWidget* parent = nullptr);

  GateModel* model() const { return model_; }
  QTableView* tableView() const { return table_; }
  QComboBox* metricCombo() const { return metric_; }  // item data: the metric's name
  analysis::GateMetric metric() const;
  QChart* contextChart() const { return context_chart_; }
  QChart* stepChart() const { return step_chart_; }
  QChartView* stepChartView() const { return step_view_; }
  QLabel* emptyMessage() const { return empty_; }
  bool showsEmptyMessage() const;
  QString caption() const;

  // The clicked cell: its row's charts are drawn; -1 when nothing is selected.
  int selectedRow() const { return row_; }
  QString selectedDistribution() const;
  void selectCell(int row, int column);

 public slots:
  // read_gate_json gives the gate.json of a case run with steps (its decode-step series).
  void setCases(const std::vector<tilepath::CaseSummary>& cases,
                const tilepath::analysis::GateJsonReader& read_gate_json = {});
  // A table built without a reader (on another thread); its step series are read here.
  void setTable(tilepath::analysis::GateTable table, const tilepath::analysis::GateJsonReader& read_gate_json = {});

 private:
  GateModel* model_;
  QStackedWidget* pages_;
  QLabel *empty_, *caption_, *no_steps_;
  QTableView* table_;
  QComboBox* metric_;
  QChart *context_chart_, *step_chart_;
  QChartView *context_view_, *step_view_;
  QLogValueAxis* context_x_;
  QValueAxis *context_y_, *step_x_, *step_y_;
  int row_ = -1, column_ = -1;

  void redraw();  // the selection or the metric changed
  void rebuildContextChart();
  void rebuildStepChart();
};

}  // namespace tilepath::ui
