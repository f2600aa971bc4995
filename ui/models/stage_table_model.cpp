#include "ui/models/stage_table_model.h"

#include <QFont>

#include "ui/qt_text.h"

namespace tilepath::ui {

StageTableModel::StageTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void StageTableModel::setAnalysis(const VariantAnalysis& a) {
  beginResetModel();
  stages_ = a.graph.stages();
  agents_.clear();
  for (Stage s : stages_) agents_.push_back(a.graph.agent_of(s));
  measured_ = a.measured;
  has_case_ = a.source_case.has_value();
  predicted_ = a.predicted;
  has_schedule_ = !a.schedule.stages.empty();
  slack_ = has_schedule_ ? a.ii.slack_us : StageCosts();
  limiting_ = a.ii.limiting_stage;
  endResetModel();
}

int StageTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(stages_.size());
}
int StageTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant StageTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(stages_.size())) return {};
  const Stage s = stages_[index.row()];
  const bool limiting = has_schedule_ && s == limiting_;
  if (role == StageRole) return static_cast<int>(s);
  if (role == Qt::FontRole && limiting) {
    QFont f;
    f.setBold(true);
    return f;
  }
  if (role == Qt::TextAlignmentRole && index.column() >= MeasuredUs && index.column() <= SlackUs)
    return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole && index.column() == MeasuredUs && measured_.known(s)) return stageCostNote(measured_[s]);
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case StageName:
      return qs(to_string(s));
    case AgentName:
      return qs(to_string(agents_[index.row()]));
    case MeasuredUs:
      return has_case_ && !measured_.known(s) ? QStringLiteral("unknown") : stageCostText(measured_[s], 5);
    case CostSource:
      return has_case_ ? qs(analysis::to_string(measured_.source_of(s))) : QString();
    case PredictedUs:
      return formatNumber(predicted_[s], 3);
    case SlackUs:
      return formatNumber(slack_[s], 3);
    case Limiting:
      return limiting ? QStringLiteral("limits II") : QString();
  }
  return {};
}

QVariant StageTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, orientation, role);
  static const char* names[ColumnCount] = {"Stage",      "Agent", "Measured (µs/tile)", "Source", "Predicted (µs/tile)",
                                           "Slack (µs)", ""};
  return section >= 0 && section < ColumnCount ? QVariant(QString::fromUtf8(names[section])) : QVariant();
}

}  // namespace tilepath::ui
