#pragma once
// The stored numerical-gate results as core groups them (core/analysis/gate_table.h), for
// the gate view: one row per representation, one column per key distribution, each cell
// the largest context's case (pass or fail, worst rel_l2 and KL; every metric, threshold,
// row count and case id on hover). The chart series here restate core's context and
// decode-step series for one metric.

#include <vector>

#include <QAbstractTableModel>
#include <QColor>
#include <QList>
#include <QPointF>
#include <QString>

#include "core/analysis/gate_table.h"
#include "core/store/run_store.h"

namespace tilepath::ui {

QColor gatePassColour();
QColor gateFailColour();
// "rel_l2", "max_abs", "KL", "top-8", "top-32"
QString gateMetricTitle(analysis::GateMetric metric);
// "≤ 0.1", "≥ 0.5", "not gated"
QString gateThresholdText(analysis::GateMetric metric, double threshold);
// A metric value as the cells and hover texts print it: three significant digits.
QString gateValueText(double value);
// The cell: "pass" or "FAIL", then the worst rel_l2 and KL.
QString gateCellDisplay(const analysis::GateCell& cell);
// Hover text: representation and distribution, the shown case's shape, every metric
// (worst, median, threshold, pass/fail), rows checked of total, and every case id.
QString gateCellText(const analysis::GateRow& row, const analysis::GateCell& cell);

// One line of a chart: a distribution's points against context, or one case's against step.
struct GateChartLine {
  QString name;
  QString distribution;
  QList<QPointF> points;     // (context or step, metric value); cases without the metric left out
  QList<QPointF> failing;    // those of the points whose case (or step) fails the gate
  QList<double> thresholds;  // the distinct finite thresholds of those cases, ascending
};
// Per distribution of the row, its cases' worst value of `metric` against context.
std::vector<GateChartLine> gateContextLines(const analysis::GateRow& row, analysis::GateMetric metric);
// Per case of the row run with decode steps, the step's worst value of `metric` against step.
std::vector<GateChartLine> gateStepLines(const analysis::GateRow& row, analysis::GateMetric metric);

class GateModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  static constexpr int CaseIdRole = Qt::UserRole;      // the shown case's id
  static constexpr int PassedRole = Qt::UserRole + 1;  // bool; invalid for an empty cell

  explicit GateModel(QObject* parent = nullptr);
  // Rebuilds the table; read_gate_json gives the gate.json of a case run with steps.
  void setCases(const std::vector<CaseSummary>& cases, const analysis::GateJsonReader& read_gate_json = {});
  void setTable(analysis::GateTable table);

  const analysis::GateTable& table() const { return table_; }
  const analysis::GateRow* rowAt(int row) const;
  const analysis::GateCell* cellAt(int row, int column) const;
  QString distributionAt(int column) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  analysis::GateTable table_;
};

}  // namespace tilepath::ui
