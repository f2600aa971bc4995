#include "ui/models/gate_model.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "ui/qt_text.h"

namespace tilepath::ui {

namespace {

using analysis::GateMetric;

QString metricValue(const analysis::GateMetricResult& m) {
  return m.stored ? gateValueText(m.worst) : QStringLiteral("—");
}

void addThreshold(GateChartLine& line, double threshold) {
  if (std::isfinite(threshold) && !line.thresholds.contains(threshold)) line.thresholds.append(threshold);
}

}  // namespace

// Light fills, so the black text on them reads as well as on the table's white.
QColor gatePassColour() { return QColor(0xb7, 0xe1, 0xb0); }
QColor gateFailColour() { return QColor(0xf2, 0xa7, 0xa7); }

QString gateMetricTitle(GateMetric metric) {
  switch (metric) {
    case GateMetric::rel_l2:
      return QStringLiteral("rel_l2");
    case GateMetric::max_abs:
      return QStringLiteral("max_abs");
    case GateMetric::kl:
      return QStringLiteral("KL");
    case GateMetric::top8:
      return QStringLiteral("top-8");
    case GateMetric::top32:
      return QStringLiteral("top-32");
  }
  return {};
}

QString gateThresholdText(GateMetric metric, double threshold) {
  if (!std::isfinite(threshold)) return QStringLiteral("not gated");
  return (analysis::gate_metric_at_least(metric) ? QStringLiteral("≥ ") : QStringLiteral("≤ ")) +
         gateValueText(threshold);
}

QString gateValueText(double value) {
  if (!std::isfinite(value)) return QStringLiteral("—");
  return QString::number(value, 'g', 3);
}

QString gateCellDisplay(const analysis::GateCell& cell) {
  const analysis::GateCaseResult& r = cell.shown;
  return QStringLiteral("%1\nrel_l2 %2 · KL %3")
      .arg(r.passed ? QStringLiteral("pass") : QStringLiteral("FAIL"), metricValue(r.metric(GateMetric::rel_l2)),
           metricValue(r.metric(GateMetric::kl)));
}

QString gateCellText(const analysis::GateRow& row, const analysis::GateCell& cell) {
  const analysis::GateCaseResult& r = cell.shown;
  const OperatingPoint& op = r.op;
  QStringList lines;
  lines << QStringLiteral("%1 on %2: %3")
               .arg(qs(row.label), qs(r.distribution), r.passed ? QStringLiteral("pass") : QStringLiteral("FAIL"));
  QString where = QStringLiteral("case %1 (%2): B=%3, S=%4, Hq/Hk %5/%6, D %7")
                      .arg(r.case_id)
                      .arg(qs(r.backend))
                      .arg(op.batch)
                      .arg(op.context)
                      .arg(op.q_heads)
                      .arg(op.kv_heads)
                      .arg(op.head_dim);
  if (r.seed) where += QStringLiteral(", seed %1").arg(*r.seed);
  lines << where;
  if (r.steps > 0) lines << QStringLiteral("%1 decode steps after the context: the worst step's metrics").arg(r.steps);
  for (GateMetric m : analysis::kGateMetrics) {
    const analysis::GateMetricResult& v = r.metric(m);
    if (!v.stored) {
      lines << QStringLiteral("%1: not stored").arg(qs(to_string(m)));
      continue;
    }
    QString text = QStringLiteral("%1: worst %2 (%3")
                       .arg(qs(to_string(m)), gateValueText(v.worst), gateThresholdText(m, v.threshold));
    if (std::isfinite(v.threshold)) text += v.passed ? QStringLiteral(", pass") : QStringLiteral(", FAIL");
    text += QLatin1Char(')');
    if (std::isfinite(v.median)) text += QStringLiteral(", median %1").arg(gateValueText(v.median));
    lines << text;
  }
  if (r.rows_checked >= 0 && r.rows_total >= 0)
    lines << QStringLiteral("rows checked: %1 of %2 (request, kv head)").arg(r.rows_checked).arg(r.rows_total);
  else
    lines << QStringLiteral("rows checked: not stored");
  const std::vector<analysis::GateCaseResult>& series = row.context_series.at(r.distribution);
  QStringList cases;
  for (const analysis::GateCaseResult& c : series) cases << QStringLiteral("%1 (S=%2)").arg(c.case_id).arg(c.context());
  lines << QStringLiteral("cases (by context): %1").arg(cases.join(QStringLiteral(", ")));
  return lines.join(QLatin1Char('\n'));
}

std::vector<GateChartLine> gateContextLines(const analysis::GateRow& row, GateMetric metric) {
  std::vector<GateChartLine> out;
  for (const auto& [distribution, series] : row.context_series) {
    GateChartLine line;
    line.name = line.distribution = qs(distribution);
    for (const analysis::GateCaseResult& r : series) {
      const analysis::GateMetricResult& v = r.metric(metric);
      if (!v.stored || !std::isfinite(v.worst)) continue;
      const QPointF p(r.context(), v.worst);
      line.points << p;
      if (!r.passed) line.failing << p;
      addThreshold(line, v.threshold);
    }
    std::sort(line.thresholds.begin(), line.thresholds.end());
    if (!line.points.isEmpty()) out.push_back(std::move(line));
  }
  return out;
}

std::vector<GateChartLine> gateStepLines(const analysis::GateRow& row, GateMetric metric) {
  std::vector<GateChartLine> out;
  for (const analysis::GateStepSeries& s : row.step_series) {
    GateChartLine line;
    line.distribution = qs(s.result.distribution);
    line.name =
        QStringLiteral("%1, S=%2, case %3").arg(line.distribution).arg(s.result.context()).arg(s.result.case_id);
    for (const analysis::GateStepPoint& p : s.points) {
      const double v = p.value(metric);
      if (!std::isfinite(v)) continue;
      line.points << QPointF(p.step, v);
      if (!p.passed) line.failing << QPointF(p.step, v);
    }
    addThreshold(line, s.result.metric(metric).threshold);
    if (!line.points.isEmpty()) out.push_back(std::move(line));
  }
  return out;
}

GateModel::GateModel(QObject* parent) : QAbstractTableModel(parent) {}

void GateModel::setCases(const std::vector<CaseSummary>& cases, const analysis::GateJsonReader& read_gate_json) {
  setTable(analysis::build_gate_table(cases, read_gate_json));
}

void GateModel::setTable(analysis::GateTable table) {
  beginResetModel();
  table_ = std::move(table);
  endResetModel();
}

const analysis::GateRow* GateModel::rowAt(int row) const {
  return row >= 0 && row < static_cast<int>(table_.rows.size()) ? &table_.rows[row] : nullptr;
}

const analysis::GateCell* GateModel::cellAt(int row, int column) const {
  const analysis::GateRow* r = rowAt(row);
  if (r == nullptr || column < 0 || column >= static_cast<int>(table_.distributions.size())) return nullptr;
  return r->cell(table_.distributions[column]);
}

QString GateModel::distributionAt(int column) const {
  return column >= 0 && column < static_cast<int>(table_.distributions.size()) ? qs(table_.distributions[column])
                                                                               : QString();
}

int GateModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(table_.rows.size());
}
int GateModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(table_.distributions.size());
}

QVariant GateModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const analysis::GateCell* cell = cellAt(index.row(), index.column());
  if (cell == nullptr) {
    if (role == Qt::DisplayRole) return QStringLiteral("—");
    if (role == Qt::ToolTipRole)
      return QStringLiteral("no %1 result for %2 stored")
          .arg(distributionAt(index.column()), qs(rowAt(index.row())->label));
    if (role == Qt::TextAlignmentRole) return int(Qt::AlignCenter);
    return {};
  }
  switch (role) {
    case Qt::DisplayRole:
      return gateCellDisplay(*cell);
    case Qt::ToolTipRole:
      return gateCellText(*rowAt(index.row()), *cell);
    case Qt::BackgroundRole:
      return cell->shown.passed ? gatePassColour() : gateFailColour();
    case Qt::ForegroundRole:
      return QColor(Qt::black);
    case Qt::TextAlignmentRole:
      return int(Qt::AlignCenter);
    case CaseIdRole:
      return QVariant::fromValue<qlonglong>(cell->shown.case_id);
    case PassedRole:
      return cell->shown.passed;
  }
  return {};
}

QVariant GateModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
  if (orientation == Qt::Horizontal) return distributionAt(section);
  const analysis::GateRow* r = rowAt(section);
  return r ? QVariant(qs(r->label)) : QVariant();
}

}  // namespace tilepath::ui
