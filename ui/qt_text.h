#pragma once
// Small conversions between core's std::string world and Qt strings.

#include <cmath>
#include <string>
#include <string_view>

#include <QString>
#include <QVariant>

namespace tilepath::ui {

inline QString qs(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }
inline std::string ss(const QString& s) { return s.toStdString(); }

// A number for display: "" for NaN/absent (so tables show a blank, not "nan").
inline QString formatNumber(double v, int precision = 3) {
  if (!std::isfinite(v)) return {};
  return QString::number(v, 'g', precision + 2);
}
// A number for sorting/export: invalid QVariant for NaN.
inline QVariant numberOrNull(double v) { return std::isfinite(v) ? QVariant(v) : QVariant(); }

}  // namespace tilepath::ui
