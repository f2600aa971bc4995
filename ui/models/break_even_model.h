#pragma once
// The break-even table of the stored cases: one row per shape with its K8/V8 −
// K16/V8 decomposition and V hidden fraction, as core computes them
// (core/analysis/break_even_analysis.h: the fastest K8/V8 variant per shape), and the
// noise of the difference from the repeats' spread of the two cases compared.

#include <cmath>
#include <vector>

#include <QAbstractTableModel>

#include "core/analysis/break_even_analysis.h"
#include "core/store/run_store.h"

namespace tilepath::ui {

struct BreakEvenRow : analysis::BreakEvenAnalysis {
  // Half the summed repeat spreads (max − min latency) of the K8/V8 and K16/V8 cases, each
  // taken relative to its latency and applied to its II, in the row's unit: a value of Δ or
  // of a component within ±noise_us cannot be told from run-to-run spread. NaN when a
  // case did not store its min and max.
  double noise_us = NAN;
  // The relative spreads (max − min) / latency of the two cases; NaN when not stored.
  double k8v8_spread = NAN, k16v8_spread = NAN;

  // Is this value within the noise? false when the noise is unknown.
  bool withinNoise(double value_us) const { return std::isfinite(noise_us) && std::abs(value_us) <= noise_us; }
};

// "B=64 S=4096 32/8×128 cold"
QString breakEvenShapeLabel(const BreakEvenRow& row);
// "µs/1k tokens" or "µs/tile": the unit of a row's IIs and decomposition.
QString breakEvenUnitLabel(const BreakEvenRow& row);
// What the row's noise is and where it comes from, or why it is unknown.
QString breakEvenNoiseNote(const BreakEvenRow& row);

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
    NoiseUs,
    UnhiddenPrepUs,
    PenaltyUs,
    ExtraK16HbmUs,
    VHiddenFraction,
    ColumnCount
  };
  static constexpr int SortRole = Qt::UserRole;
  // true on a cell whose value is within the row's noise (Δ and the components).
  static constexpr int WithinNoiseRole = Qt::UserRole + 1;

  explicit BreakEvenModel(QObject* parent = nullptr);
  // read_stage_costs: for cases listed without their stage costs (analysis::break_even_table).
  void setCases(const std::vector<CaseSummary>& cases, const analysis::StageCostReader& read_stage_costs = {});
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
