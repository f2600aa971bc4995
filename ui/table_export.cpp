#include "ui/table_export.h"

#include <QAbstractItemModel>
#include <QFile>
#include <QStringList>

namespace tilepath::ui {

namespace {
QString csvField(QString s) {
  if (s.contains(QLatin1Char(',')) || s.contains(QLatin1Char('"')) || s.contains(QLatin1Char('\n'))) {
    s.replace(QLatin1String("\""), QLatin1String("\"\""));
    return QLatin1Char('"') + s + QLatin1Char('"');
  }
  return s;
}
}  // namespace

QString modelToCsv(const QAbstractItemModel& model) {
  QString out;
  QStringList fields;
  // A header's line break is layout (two-line table headers), not part of the name.
  for (int c = 0; c < model.columnCount(); ++c)
    fields << csvField(model.headerData(c, Qt::Horizontal).toString().replace(QLatin1Char('\n'), QLatin1Char(' ')));
  out += fields.join(QLatin1Char(',')) + QLatin1Char('\n');
  for (int r = 0; r < model.rowCount(); ++r) {
    fields.clear();
    for (int c = 0; c < model.columnCount(); ++c) fields << csvField(model.index(r, c).data().toString());
    out += fields.join(QLatin1Char(',')) + QLatin1Char('\n');
  }
  return out;
}

bool writeModelCsv(const QAbstractItemModel& model, const QString& path, QString* error) {
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text)) {
    if (error) *error = QStringLiteral("%1: cannot write (%2)").arg(path, file.errorString());
    return false;
  }
  file.write(modelToCsv(model).toUtf8());
  return true;
}

}  // namespace tilepath::ui
