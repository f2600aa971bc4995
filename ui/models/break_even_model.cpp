#include "ui/models/break_even_model.h"

#include <cmath>

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

void BreakEvenModel::setCases(const std::vector<CaseSummary>& cases) {
  beginResetModel();
  rows_ = analysis::break_even_table(cases);
  endResetModel();
}

int BreakEvenModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}
int BreakEvenModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant BreakEvenModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size())) return {};
  const BreakEvenRow& r = rows_[index.row()];
  const bool sort = role == SortRole;
  if (role != Qt::DisplayRole && !sort) {
    if (role == Qt::TextAlignmentRole && index.column() >= TK16V16) return int(Qt::AlignRight | Qt::AlignVCenter);
    return {};
  }
  auto num = [&](double v) -> QVariant { return sort ? numberOrNull(v) : QVariant(formatNumber(v, 3)); };
  // The decomposition's columns are per 1k tokens; a row whose cases did not report
  // their tile size is per tile, and says so.
  auto per = [&](double v) -> QVariant {
    if (sort || r.unit == "us_per_1k_tokens" || !std::isfinite(v)) return num(v);
    return formatNumber(v, 3) + QStringLiteral(" /tile");
  };
  const BreakEven* d = r.decomposition ? &*r.decomposition : nullptr;
  switch (index.column()) {
    case Backend:
      return qs(r.backend);
    case Shape:
      return sort ? QVariant(double(r.op.batch) * 1e9 + r.op.context) : QVariant(breakEvenShapeLabel(r));
    case K8V8Variant:
      return qs(r.k8v8_variant);
    case TK16V16:
      return num(r.t_k16v16_us);
    case TK16V8:
      return num(r.t_k16v8_us);
    case TK8V8:
      return num(r.t_k8v8_us);
    case DeltaUs:
      return per(d ? d->delta_us : NAN);
    case UnhiddenPrepUs:
      return per(d ? d->unhidden_k8_prep_us : NAN);
    case PenaltyUs:
      return per(d ? d->pipeline_penalty_us : NAN);
    case ExtraK16HbmUs:
      return per(d ? d->extra_k16_hbm_us : NAN);
    case VHiddenFraction:
      return num(r.v_hidden_fraction);
  }
  return {};
}

QVariant BreakEvenModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation == Qt::Horizontal && role == Qt::ToolTipRole && section >= DeltaUs && section <= ExtraK16HbmUs)
    return tr(
        "µs per 1k KV tokens of one kv head's stream (tiles hold 32, 64 or 128 tokens by variant); "
        "\"/tile\" where a case did not report its tile size");
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, orientation, role);
  // Every number column names its unit: the decomposition is per 1k KV tokens (a row whose
  // cases did not report their tile size says "/tile" in its cells).
  static const char* names[ColumnCount] = {"Backend",
                                           "Shape",
                                           "K8/V8 variant",
                                           "T K16/V16 (µs)",
                                           "T K16/V8 (µs)",
                                           "T K8/V8 (µs)",
                                           "Δ II (µs/1k tok)",
                                           "Unhidden K8 prep (µs/1k tok)",
                                           "Pipeline penalty (µs/1k tok)",
                                           "Extra K16 HBM (µs/1k tok)",
                                           "V hidden (fraction 0–1)"};
  return section >= 0 && section < ColumnCount ? QVariant(QString::fromUtf8(names[section])) : QVariant();
}

}  // namespace tilepath::ui
