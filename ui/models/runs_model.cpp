#include "ui/models/runs_model.h"

#include <map>

#include "ui/qt_text.h"

namespace tilepath::ui {

RunsModel::RunsModel(QObject* parent) : QAbstractTableModel(parent) {}

void RunsModel::setRuns(std::vector<RunInfo> runs, const std::vector<CaseSummary>& cases) {
  beginResetModel();
  runs_ = std::move(runs);
  std::map<std::int64_t, int> per_run;
  for (const CaseSummary& c : cases) ++per_run[c.run_id];
  case_counts_.clear();
  for (const RunInfo& r : runs_) case_counts_.push_back(per_run.count(r.id) ? per_run[r.id] : 0);
  endResetModel();
}

int RunsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(runs_.size());
}
int RunsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant RunsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(runs_.size())) return {};
  const RunInfo& r = runs_[index.row()];
  if (role == RunIdRole) return QVariant::fromValue<qint64>(r.id);
  if (role != Qt::DisplayRole && role != SortRole && role != Qt::ToolTipRole) return {};
  switch (index.column()) {
    case Id:
      return QVariant::fromValue<qint64>(r.id);
    case Started:
      return qs(r.started_at);
    case Backend:
      return qs(r.backend) + (r.backend_version.empty() ? QString() : QStringLiteral(" ") + qs(r.backend_version));
    case Device:
      return qs(r.device);
    case DeviceId:  // which of the host's devices: its index and a uid that survives renumbering
      if (r.device_uid.empty() && r.device_index < 0) return QStringLiteral("not recorded");
      return (r.device_index >= 0 ? QString::number(r.device_index) + QStringLiteral(" · ") : QString()) +
             qs(r.device_uid);
    case Host:
      return qs(r.host);
    case ToolVersion:
      return qs(r.tool_version);
    case GitRevision:
      return qs(r.git_revision);
    case Cases:
      return case_counts_[index.row()];
    case Command:
      return qs(r.command);
  }
  return {};
}

QVariant RunsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, orientation, role);
  static const char* names[ColumnCount] = {"Run",  "Started (UTC)", "Backend",  "Device", "Device id",
                                           "Host", "tilepath",      "Revision", "Cases",  "Command"};
  return section >= 0 && section < ColumnCount ? QVariant(QString::fromLatin1(names[section])) : QVariant();
}

}  // namespace tilepath::ui
