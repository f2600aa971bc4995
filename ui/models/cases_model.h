#pragma once
// Flat table of the stored cases (RunStore::cases), one row per case. Numeric
// columns return numbers under SortRole so a QSortFilterProxyModel sorts them
// numerically.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <QAbstractTableModel>

#include "core/store/run_store.h"

namespace tilepath::ui {

class CasesModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  // What a case is and how fast it ran first; where it ran and the kernel's name last.
  enum Column {
    Id,
    Kv,
    KPath,
    Mode,
    Batch,
    Context,
    Cache,
    LatencyUs,
    FloorFraction,
    TileIntervalUs,
    Status,
    KRepr,
    Mma,  // the matrix instruction family
    QHeads,
    KvHeads,
    HeadDim,
    GateRelL2,         // the gate on the case's own inputs, against full precision
    KernelCheckRelL2,  // the kernel against an emulation of its own arithmetic
    Run,
    Backend,
    Device,
    Kernel,
    ColumnCount
  };
  static constexpr int SortRole = Qt::UserRole;
  static constexpr int CaseIdRole = Qt::UserRole + 1;

  explicit CasesModel(QObject* parent = nullptr);
  void setCases(std::vector<CaseSummary> cases);
  void setSharedCases(std::shared_ptr<const std::vector<CaseSummary>> cases);
  const CaseSummary& caseAt(int row) const { return cases_->at(row); }
  const std::vector<CaseSummary>& cases() const { return *cases_; }
  int rowOfCase(std::int64_t caseId) const;  // -1 when absent
  // What an integer column (case, run, B, S, Hq, Hk, D) sorts by, as data() under SortRole
  // says it; nullopt for the other columns. A proxy compares these without a QVariant per
  // side: sorting 100k cases is 1.7 M comparisons.
  static std::optional<qint64> integerSortKey(const CaseSummary& c, int column);
  // Reads a case's message for the Status tooltip when the list holds none (a list read
  // without case texts, DatabaseSession::listDetail).
  void setMessageReader(std::function<std::string(std::int64_t caseId)> reader) { message_reader_ = std::move(reader); }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  // Shared with the session and the other views: 100k cases are held once.
  std::shared_ptr<const std::vector<CaseSummary>> cases_ = std::make_shared<const std::vector<CaseSummary>>();
  std::function<std::string(std::int64_t)> message_reader_;
  QVariant value(const CaseSummary& c, int column, bool forSort) const;
};

}  // namespace tilepath::ui
