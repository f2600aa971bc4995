#pragma once
// Table of the runs in the open database.

#include <vector>

#include <QAbstractTableModel>

#include "core/store/run_store.h"

namespace tilepath::ui {

class RunsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Id, Started, Backend, Device, DeviceId, Host, ToolVersion, GitRevision, Cases, Command, ColumnCount };
  static constexpr int SortRole = Qt::UserRole;
  static constexpr int RunIdRole = Qt::UserRole + 1;

  explicit RunsModel(QObject* parent = nullptr);
  // caseCounts: cases per run id (from the case list), shown in the Cases column.
  void setRuns(std::vector<RunInfo> runs, const std::vector<CaseSummary>& cases = {});
  const RunInfo& runAt(int row) const { return runs_.at(row); }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<RunInfo> runs_;
  std::vector<int> case_counts_;
};

}  // namespace tilepath::ui
