#pragma once
// The dispatch table of the stored cases as core builds it (core/analysis/dispatch.h:
// per measured point the fastest admitted variant, its margin, the crossovers, the
// leave-one-out regret), for the dispatch view: one table per gate choice, one group of
// it shown at a time, one row per measured point of that group (CSV export). The text and
// the speed-up series here only restate what core computed.

#include <memory>
#include <optional>
#include <vector>

#include <QAbstractTableModel>
#include <QPointF>
#include <QStringList>

#include "core/analysis/dispatch.h"
#include "core/store/run_store.h"

namespace tilepath::ui {

// "cuda, NVIDIA H200, Hq/Hk 32/8, D 128, page 16, hbm_cold"
QString dispatchGroupLabel(const analysis::DispatchGroup& group);
// A fraction as the CLI prints it: "1.23%"; "" for NaN.
QString percentText(double fraction);
// The distributions of the cases' gate rows (analysis::is_gate_row), sorted: the gates a
// table can apply. The speed runs' kernel check rows are never a gate and are left out.
QStringList gateDistributions(const std::vector<CaseSummary>& cases);
// Hover text of a measured point: winner and runner-up with their latencies and cases,
// the margin, every admitted case, the excluded variants with the reasons.
QString dispatchCellText(const analysis::DispatchGroup& group, const analysis::DispatchCell& cell);
// Hover text of a crossover: where, between which points, from and to, margins, cases.
QString crossoverText(const analysis::Crossover& crossover);

// One line of the speed-up chart: at each measured context of one batch where both are
// measured, t(fastest admitted K16/V16 variant) / t(winner).
struct DispatchSpeedup {
  int batch = 0;
  std::vector<QPointF> points;  // (context, speed-up), by context
};
std::vector<DispatchSpeedup> speedupOverK16V16(const analysis::DispatchGroup& group);

class DispatchModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    Batch,
    Context,
    Winner,
    WinnerUs,
    RunnerUp,
    RunnerUpUs,
    Margin,
    SpeedupOverK16V16,
    Admitted,
    Excluded,
    Cases,
    ColumnCount
  };
  static constexpr int SortRole = Qt::UserRole;

  explicit DispatchModel(QObject* parent = nullptr);
  // Rebuilds the table with the current gate; the group with the same label stays chosen.
  void setCases(const std::vector<CaseSummary>& cases);
  void setSharedCases(std::shared_ptr<const std::vector<CaseSummary>> cases);
  // "" = no gate; otherwise the quality rows of this distribution exclude failing variants.
  void setGateDistribution(const QString& distribution);
  void setGroupIndex(int index);

  const analysis::DispatchTable& table() const { return table_; }
  const analysis::DispatchGroup* group() const;  // nullptr when the table has no group
  int groupIndex() const { return group_; }
  QString gateDistribution() const { return gate_; }
  QStringList gates() const { return gates_; }  // gateDistributions() of the cases
  // Whether every group has the same backend, device and shape (then only the cache differs).
  bool groupsDifferOnlyInCache() const;
  // One label per group: the cache state alone when only the cache differs, else dispatchGroupLabel().
  QStringList groupLabels() const;
  // The chosen group's leave-one-out regret (core's, over that group alone).
  const analysis::RegretSummary& groupRegret() const { return group_regret_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 signals:
  void tableChanged();  // a new table (cases or gate) or another group chosen

 private:
  // Shared with the session and the other views: 100k cases are held once.
  std::shared_ptr<const std::vector<CaseSummary>> cases_ = std::make_shared<const std::vector<CaseSummary>>();
  QString gate_;
  QStringList gates_;
  analysis::DispatchTable table_;
  int group_ = -1;
  analysis::RegretSummary group_regret_;
  std::vector<const analysis::DispatchCell*> rows_;  // the chosen group's cells, by (batch, context)
  std::vector<double> speedups_;                     // per row; NaN without a K16/V16 case there

  void rebuild();
  void chooseGroup(int index);  // inside a model reset
};

}  // namespace tilepath::ui
