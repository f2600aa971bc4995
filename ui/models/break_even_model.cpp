#include "ui/models/break_even_model.h"

#include <cmath>
#include <unordered_map>

#include <QApplication>
#include <QBrush>
#include <QStyle>

#include "ui/qt_text.h"

namespace tilepath::ui {

QString breakEvenShapeLabel(const BreakEvenRow& row) {
  const OperatingPoint& op = row.op;
  return QStringLiteral("B=%1 S=%2 %3/%4×%5 %6")
      .arg(op.batch)
      .arg(op.context)
      .arg(op.q_heads)
      .arg(op.kv_heads)
      .arg(op.head_dim)
      .arg(op.cache == CacheState::l2_warm ? QStringLiteral("warm") : QStringLiteral("cold"));
}

QString breakEvenUnitLabel(const BreakEvenRow& row) {
  return row.unit == "us_per_1k_tokens" ? QStringLiteral("µs/1k tokens") : QStringLiteral("µs/tile");
}

BreakEvenModel::BreakEvenModel(QObject* parent) : QAbstractTableModel(parent) {}

namespace {

// (max − min) / latency of a case's repeats; NaN when it stored no min and max.
double relativeSpread(const CaseSummary* c) {
  if (!c) return NAN;
  const CaseRecord& r = c->record;
  const double latency = r.measurement("latency_us").value_or(NAN);
  const double low = r.measurement("latency_min_us").value_or(NAN);
  const double high = r.measurement("latency_max_us").value_or(NAN);
  if (!std::isfinite(latency) || !std::isfinite(low) || !std::isfinite(high) || latency <= 0) return NAN;
  return (high - low) / latency;
}

const QColor kNoiseColour(0xb3, 0x5c, 0x00);

}  // namespace

void BreakEvenModel::setCases(const std::vector<CaseSummary>& cases,
                              const analysis::StageCostReader& read_stage_costs) {
  beginResetModel();
  rows_.clear();
  for (analysis::BreakEvenAnalysis& analysis : analysis::break_even_table(cases, read_stage_costs)) {
    BreakEvenRow row;
    static_cast<analysis::BreakEvenAnalysis&>(row) = std::move(analysis);
    rows_.push_back(std::move(row));
  }
  // The paired cases, found in one pass: a few dozen rows over up to 100k cases.
  std::unordered_map<std::int64_t, const CaseSummary*> paired;
  for (const BreakEvenRow& row : rows_) paired[row.k8v8_case_id] = paired[row.k16v8_case_id] = nullptr;
  for (const CaseSummary& c : cases)
    if (const auto it = paired.find(c.case_id); it != paired.end() && it->second == nullptr) it->second = &c;
  for (BreakEvenRow& row : rows_) {
    row.k8v8_spread = relativeSpread(paired[row.k8v8_case_id]);
    row.k16v8_spread = relativeSpread(paired[row.k16v8_case_id]);
    // Two medians whose repeats' ranges overlap differ by at most half their summed ranges:
    // the same bound, per II, in the row's unit.
    row.noise_us = 0.5 * (row.ii_k8v8_us * row.k8v8_spread + row.ii_k16v8_us * row.k16v8_spread);
  }
  endResetModel();
}

QString breakEvenNoiseNote(const BreakEvenRow& row) {
  if (!std::isfinite(row.noise_us))
    return BreakEvenModel::tr("noise unknown: the K8/V8 or K16/V8 case stored no min/max of its repeats");
  return BreakEvenModel::tr(
             "±%1 %2: half the repeats' spread (max − min) of K8/V8 (%3%) and K16/V8 (%4%), each applied "
             "to its II")
      .arg(formatNumber(row.noise_us, 2), breakEvenUnitLabel(row))
      .arg(100 * row.k8v8_spread, 0, 'f', 1)
      .arg(100 * row.k16v8_spread, 0, 'f', 1);
}

int BreakEvenModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}
int BreakEvenModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant BreakEvenModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size())) return {};
  const BreakEvenRow& r = rows_[index.row()];
  const bool sort = role == SortRole;
  const BreakEven* d = r.decomposition ? &*r.decomposition : nullptr;
  if (role == WithinNoiseRole || role == Qt::ForegroundRole || role == Qt::DecorationRole || role == Qt::ToolTipRole) {
    const double value = !d                                 ? NAN
                         : index.column() == DeltaUs        ? d->delta_us
                         : index.column() == UnhiddenPrepUs ? d->unhidden_k8_prep_us
                         : index.column() == PenaltyUs      ? d->pipeline_penalty_us
                         : index.column() == ExtraK16HbmUs  ? d->extra_k16_hbm_us
                                                            : NAN;
    const bool noisy = std::isfinite(value) && r.withinNoise(value);
    if (role == WithinNoiseRole) return noisy;
    if (role == Qt::ToolTipRole && index.column() == NoiseUs) return breakEvenNoiseNote(r);
    if (!noisy) return {};
    if (role == Qt::ForegroundRole) return QBrush(kNoiseColour);
    // The row's warning sits on Δ: the difference itself cannot be told from noise.
    if (role == Qt::DecorationRole)
      return index.column() == DeltaUs ? QVariant(QApplication::style()->standardIcon(QStyle::SP_MessageBoxWarning))
                                       : QVariant();
    return tr("%1 is within the noise: %2").arg(formatNumber(value, 3), breakEvenNoiseNote(r));
  }
  if (role != Qt::DisplayRole && !sort) {
    if (role == Qt::TextAlignmentRole && index.column() >= TK16V16) return int(Qt::AlignRight | Qt::AlignVCenter);
    return {};
  }
  auto num = [&](double v) -> QVariant { return sort ? numberOrNull(v) : QVariant(formatNumber(v, 3)); };
  // The decomposition and the V fraction to three significant digits: their differences
  // are of the order of the noise column, and the table fits its width at 1440×900.
  auto short_num = [&](double v) -> QVariant {
    if (sort || !std::isfinite(v)) return num(v);
    return QString::number(v, 'g', 3);
  };
  // The decomposition's columns are per 1k tokens; a row whose cases did not report
  // their tile size is per tile, and says so.
  auto per = [&](double v) -> QVariant {
    if (sort || r.unit == "us_per_1k_tokens" || !std::isfinite(v)) return short_num(v);
    return short_num(v).toString() + QStringLiteral(" /tile");
  };
  switch (index.column()) {
    case Backend:
      return qs(r.backend);
    case Shape:
      return sort ? QVariant(double(r.op.batch) * 1e9 + r.op.context) : QVariant(breakEvenShapeLabel(r));
    case K8V8Variant: {
      // The column says K8/V8: the variant's path and mode, without the repeated dtype.
      const QString variant = qs(r.k8v8_variant);
      return variant.startsWith(QLatin1String("k8v8/")) ? variant.mid(5) : variant;
    }
    case TK16V16:
      return num(r.t_k16v16_us);
    case TK16V8:
      return num(r.t_k16v8_us);
    case TK8V8:
      return num(r.t_k8v8_us);
    case DeltaUs:
      return per(d ? d->delta_us : NAN);
    case NoiseUs:
      if (sort) return numberOrNull(r.noise_us);
      // Unknown is said, not left blank: a blank would read as "no noise".
      return std::isfinite(r.noise_us) ? QVariant(QStringLiteral("±") + per(r.noise_us).toString())
                                       : QVariant(tr("unknown"));
    case UnhiddenPrepUs:
      return per(d ? d->unhidden_k8_prep_us : NAN);
    case PenaltyUs:
      return per(d ? d->pipeline_penalty_us : NAN);
    case ExtraK16HbmUs:
      return per(d ? d->extra_k16_hbm_us : NAN);
    case VHiddenFraction:
      return short_num(r.v_hidden_fraction);
  }
  return {};
}

QVariant BreakEvenModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation == Qt::Horizontal && role == Qt::ToolTipRole && section == NoiseUs)
    return tr(
        "Half the summed repeat spreads (max − min latency) of the K8/V8 and K16/V8 cases, each relative to "
        "its latency and applied to its II. Δ or a component within ±noise is marked: it cannot be told "
        "from run-to-run spread.");
  if (orientation == Qt::Horizontal && role == Qt::ToolTipRole && section >= DeltaUs && section <= ExtraK16HbmUs)
    return tr(
        "µs per 1k KV tokens of one kv head's stream (tiles hold 32, 64 or 128 tokens by variant); "
        "\"/tile\" where a case did not report its tile size");
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, orientation, role);
  // Every number column names its unit: the decomposition is per 1k KV tokens (a row whose
  // cases did not report their tile size says "/tile" in its cells). Headers of two or three lines: the
  // table fits its width at 1440×900 with the operating-point dock open.
  static const char* names[ColumnCount] = {"Backend",
                                           "Shape",
                                           "K8/V8 variant",
                                           "T K16/V16\n(µs)",
                                           "T K16/V8\n(µs)",
                                           "T K8/V8\n(µs)",
                                           "Δ II\n(µs/1k)",
                                           "Noise\n(µs/1k)",
                                           "Unhidden\nK8 prep\n(µs/1k)",
                                           "Pipeline\npenalty\n(µs/1k)",
                                           "Extra\nK16 HBM\n(µs/1k)",
                                           "V hidden\n(0–1)"};
  return section >= 0 && section < ColumnCount ? QVariant(QString::fromUtf8(names[section])) : QVariant();
}

}  // namespace tilepath::ui
