#pragma once
// Per shape (backend, batch, context, heads, cache) from stored cases: the
// K8/V8 − K16/V8 decomposition (core break_even) and the V hidden fraction
// (core v_hidden_fraction). K8/V8 uses the fastest stored K8/V8 variant.

#include <optional>
#include <vector>

#include <QAbstractTableModel>

#include "core/ii_model.h"
#include "core/store/run_store.h"

namespace tilepath::ui {

struct BreakEvenRow {
  QString backend;
  int batch = 0, context = 0, q_heads = 0, kv_heads = 0, head_dim = 0;
  CacheState cache = CacheState::hbm_cold;
  QString k8v8_variant;                                         // e.g. "k8v8/transform/separate_kv"
  double t_k16v16_us = NAN, t_k16v8_us = NAN, t_k8v8_us = NAN;  // latencies
  double ii_k16v8_us = NAN, ii_k8v8_us = NAN;                   // measured tile intervals (or predicted)
  std::optional<BreakEven> decomposition;                       // needs stage costs of both variants
  double v_hidden_fraction = NAN;                               // needs all three latencies
  QString shapeLabel() const;                                   // "B=64 S=4096 32/8×128 cold"
};

// Pure function so tests can check it without a model.
std::vector<BreakEvenRow> computeBreakEven(const std::vector<CaseSummary>& cases);

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
