#pragma once
// Any table model (what the user sees, after filter/sort) as CSV.

#include <QString>

class QAbstractItemModel;

namespace tilepath::ui {

// RFC 4180 quoting; header from headerData(Qt::Horizontal, Qt::DisplayRole).
QString modelToCsv(const QAbstractItemModel& model);
// Writes the CSV; false with *error naming the file when it cannot be written.
bool writeModelCsv(const QAbstractItemModel& model, const QString& path, QString* error);

}  // namespace tilepath::ui
