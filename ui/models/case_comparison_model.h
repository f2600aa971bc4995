#pragma once
// Two cases side by side, one row per field (operating point, measurements, stage costs,
// kernel metadata, predictions, error) and the columns A, B, B − A and B / A. Numbers carry
// their unit; B − A and B / A are coloured by the field's direction (lower latency is
// better, higher floor fraction is better); text fields get neither a difference nor a colour.

#include <optional>
#include <vector>

#include <QAbstractTableModel>

#include "core/store/run_store.h"

namespace tilepath::ui {

// Which way a field improves; neutral fields (batch, grid, ...) are not coloured.
enum class Better { lower, higher, neutral };

class CaseComparisonModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Field, CaseA, CaseB, Difference, Ratio, ColumnCount };
  // The number behind a cell (double; invalid for text and unknown values).
  static constexpr int ValueRole = Qt::UserRole;
  // The row's section ("Measurements", "Kernel", ...), on every cell.
  static constexpr int SectionRole = Qt::UserRole + 1;

  explicit CaseComparisonModel(QObject* parent = nullptr);
  // Either may be absent (only one case selected): its column stays empty.
  void setCases(std::optional<CaseRecord> a, std::optional<CaseRecord> b);
  void clear() { setCases(std::nullopt, std::nullopt); }
  // Row index of a field (e.g. "latency_us", "k_prep (isolated)"); -1 when absent.
  int rowOf(const QString& section, const QString& field) const;
  // B better than A: +1, worse: −1, equal, neutral, text or unknown: 0.
  int verdict(int row) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    QString section, field;
    QVariant a, b;  // double for numeric rows, QString otherwise
    QString unit;   // shown after numbers: "µs", "B", "%", ...; empty for plain numbers
    Better better = Better::neutral;
  };
  std::vector<Row> rows_;
  std::optional<CaseRecord> a_, b_;
  void rebuild();
  QVariant cellValue(const Row& row, int column) const;
};

}  // namespace tilepath::ui
