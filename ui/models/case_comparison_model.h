#pragma once
// Two cases side by side: operating point, measurements, stage costs, kernel
// metadata, predictions and error, with B − A for numeric rows.

#include <optional>
#include <vector>

#include <QAbstractTableModel>

#include "core/store/run_store.h"

namespace tilepath::ui {

class CaseComparisonModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Section, Field, CaseA, CaseB, Delta, ColumnCount };

  explicit CaseComparisonModel(QObject* parent = nullptr);
  // Either may be absent (only one case selected): its column stays empty.
  void setCases(std::optional<CaseRecord> a, std::optional<CaseRecord> b);
  // Row index of a field (e.g. "latency_us", "k_prep (isolated)"); -1 when absent.
  int rowOf(const QString& section, const QString& field) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    QString section, field;
    QVariant a, b;  // double for numeric rows, QString otherwise
  };
  std::vector<Row> rows_;
  std::optional<CaseRecord> a_, b_;
  void rebuild();
};

}  // namespace tilepath::ui
