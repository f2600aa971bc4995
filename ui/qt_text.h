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
// A measured stage cost (µs/tile) for display: a cost measured below zero (an ablation
// that made the kernel no faster) is counted as 0 by the II model, so it reads
// "≤ 0 (-0.218)", not as a negative duration.
inline QString stageCostText(double v, int significant_digits) {
  if (!std::isfinite(v)) return {};
  if (v < 0) return QStringLiteral("≤ 0 (%1)").arg(QString::number(v, 'g', 3));
  return QString::number(v, 'g', significant_digits);
}
// A number for sorting/export: invalid QVariant for NaN.
inline QVariant numberOrNull(double v) { return std::isfinite(v) ? QVariant(v) : QVariant(); }

}  // namespace tilepath::ui
