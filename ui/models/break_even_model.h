#pragma once
// The break-even table of the stored cases: one row per shape with its K8/V8 −
// K16/V8 decomposition and V hidden fraction, as core computes them
// (core/analysis/break_even_analysis.h: the fastest K8/V8 variant per shape).

#include <vector>

#include <QAbstractTableModel>

#include "core/analysis/break_even_analysis.h"
#include "core/store/run_store.h"

namespace tilepath::ui {

using BreakEvenRow = analysis::BreakEvenAnalysis;

// "B=64 S=4096 32/8×128 cold"
QString breakEvenShapeLabel(const BreakEvenRow& row);
// "µs/1k tokens" or "µs/tile": the unit of a row's IIs and decomposition.
QString breakEvenUnitLabel(const BreakEvenRow& row);

class BreakEvenModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    Backend,
    Shape,
    K8V8Variant,
    TK16V16,
    TK16V8,
    TK8V8,
    DeltaUs,
    UnhiddenPrepUs,
    PenaltyUs,
    ExtraK16HbmUs,
    VHiddenFraction,
    ColumnCount
  };
  static constexpr int SortRole = Qt::UserRole;

  explicit BreakEvenModel(QObject* parent = nullptr);
  void setCases(const std::vector<CaseSummary>& cases);
  const BreakEvenRow& rowAt(int row) const { return rows_.at(row); }
  const std::vector<BreakEvenRow>& rows() const { return rows_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<BreakEvenRow> rows_;
};

}  // namespace tilepath::ui
