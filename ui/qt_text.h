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
// "hidden (≤ 0)", not as a negative duration.
inline QString stageCostText(double v, int significant_digits) {
  if (!std::isfinite(v)) return {};
  // An ablation difference at or below zero is no duration: the stage hides behind others
  // (or the difference is noise). Exactly zero reads the same, since "0 µs" would claim a
  // measured free stage. The raw difference goes in the tooltip (stageCostNote).
  if (v <= 0) return QStringLiteral("hidden (≤ 0)");
  return QString::number(v, 'g', significant_digits);
}
// The tooltip of a cost stageCostText shows as hidden: the raw difference and what it
// means; "" for a cost it shows as is.
inline QString stageCostNote(double v) {
  if (!std::isfinite(v) || v > 0) return {};
  return QStringLiteral(
             "ablation difference %1 µs: the stage is hidden behind others, or the difference is "
             "noise; the II counts it as 0")
      .arg(QString::number(v, 'g', 3));
}
// A number for sorting/export: invalid QVariant for NaN.
inline QVariant numberOrNull(double v) { return std::isfinite(v) ? QVariant(v) : QVariant(); }

}  // namespace tilepath::ui
