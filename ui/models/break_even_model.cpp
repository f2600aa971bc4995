#include "ui/models/break_even_model.h"

#include <cmath>
#include <map>
#include <tuple>

#include "core/stage_graph.h"
#include "ui/case_selection.h"
#include "ui/qt_text.h"

namespace tilepath::ui {

QString BreakEvenRow::shapeLabel() const {
  return QStringLiteral("B=%1 S=%2 %3/%4×%5 %6")
      .arg(batch)
      .arg(context)
      .arg(q_heads)
      .arg(kv_heads)
      .arg(head_dim)
      .arg(cache == CacheState::l2_warm ? QStringLiteral("warm") : QStringLiteral("cold"));
}

namespace {

double latency(const CaseSummary& c) { return c.record.measurement("latency_us").value_or(NAN); }

// The II prediction from a case's stage costs; nullopt when it has none.
std::optional<IIPrediction> predictionOf(const CaseRecord& rec) {
  StageCosts costs = measuredStageCosts(rec);
  StageGraph graph = StageGraph::build(rec.op);
  bool any = false;
  for (Stage s : graph.stages()) {
    if (costs.has(s))
      any = true;
    else
      costs[s] = 0.0;
  }
  if (!any) return std::nullopt;
  return predict_ii(graph, costs);
}

}  // namespace

std::vector<BreakEvenRow> computeBreakEven(const std::vector<CaseSummary>& cases) {
  using ShapeKey = std::tuple<std::string, int, int, int, int, int, int, int>;
  struct Best {
    const CaseSummary* k16v16 = nullptr;
    const CaseSummary* k16v8 = nullptr;
    const CaseSummary* k8v8 = nullptr;
  };
  std::map<ShapeKey, Best> shapes;
  // Fastest ok case per dtype control at each shape (plain K only: prebias is a different representation).
  auto keep_faster = [](const CaseSummary*& slot, const CaseSummary& c) {
    if (!slot || latency(c) < latency(*slot)) slot = &c;
  };
  for (const CaseSummary& c : cases) {
    const OperatingPoint& op = c.record.op;
    if (c.record.status != CaseStatus::ok || op.k_repr != KRepr::plain || !std::isfinite(latency(c))) continue;
    ShapeKey key{c.backend,   op.batch,    op.context,   op.q_heads,
                 op.kv_heads, op.head_dim, op.page_size, static_cast<int>(op.cache)};
    Best& best = shapes[key];
    switch (op.kv) {
      case KvDtype::k16v16:
        keep_faster(best.k16v16, c);
        break;
      case KvDtype::k16v8:
        keep_faster(best.k16v8, c);
        break;
      case KvDtype::k8v8:
        keep_faster(best.k8v8, c);
        break;
      case KvDtype::k8v16:
        break;
    }
  }

  std::vector<BreakEvenRow> rows;
  for (const auto& [key, best] : shapes) {
    if (!best.k8v8 || !best.k16v8) continue;  // the decomposition needs both sides
    BreakEvenRow row;
    const OperatingPoint& op = best.k8v8->record.op;
    row.backend = qs(std::get<0>(key));
    row.batch = op.batch;
    row.context = op.context;
    row.q_heads = op.q_heads;
    row.kv_heads = op.kv_heads;
    row.head_dim = op.head_dim;
    row.cache = op.cache;
    row.k8v8_variant = qs(op.variant_label());
    row.t_k8v8_us = latency(*best.k8v8);
    row.t_k16v8_us = latency(*best.k16v8);
    if (best.k16v16) row.t_k16v16_us = latency(*best.k16v16);

    std::optional<IIPrediction> p8 = predictionOf(best.k8v8->record);
    std::optional<IIPrediction> p16 = predictionOf(best.k16v8->record);
    if (p8 && p16) {
      row.ii_k8v8_us = best.k8v8->record.measurement("tile_interval_us").value_or(p8->ii_us);
      row.ii_k16v8_us = best.k16v8->record.measurement("tile_interval_us").value_or(p16->ii_us);
      row.decomposition = break_even(*p8, row.ii_k8v8_us, *p16, row.ii_k16v8_us);
    }
    if (std::isfinite(row.t_k16v16_us))
      row.v_hidden_fraction = v_hidden_fraction(row.t_k16v16_us, row.t_k16v8_us, row.t_k8v8_us);
    rows.push_back(std::move(row));
  }
  return rows;
}

BreakEvenModel::BreakEvenModel(QObject* parent) : QAbstractTableModel(parent) {}

void BreakEvenModel::setCases(const std::vector<CaseSummary>& cases) {
  beginResetModel();
  rows_ = computeBreakEven(cases);
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
  const BreakEven* d = r.decomposition ? &*r.decomposition : nullptr;
  switch (index.column()) {
    case Backend:
      return r.backend;
    case Shape:
      return sort ? QVariant(double(r.batch) * 1e9 + r.context) : QVariant(r.shapeLabel());
    case K8V8Variant:
      return r.k8v8_variant;
    case TK16V16:
      return num(r.t_k16v16_us);
    case TK16V8:
      return num(r.t_k16v8_us);
    case TK8V8:
      return num(r.t_k8v8_us);
    case DeltaUs:
      return num(d ? d->delta_us : NAN);
    case UnhiddenPrepUs:
      return num(d ? d->unhidden_k8_prep_us : NAN);
    case PenaltyUs:
      return num(d ? d->pipeline_penalty_us : NAN);
    case ExtraK16HbmUs:
      return num(d ? d->extra_k16_hbm_us : NAN);
    case VHiddenFraction:
      return num(r.v_hidden_fraction);
  }
  return {};
}

QVariant BreakEvenModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, orientation, role);
  static const char* names[ColumnCount] = {"Backend",          "Shape",         "K8/V8 variant",  "T K16/V16 (µs)",
                                           "T K16/V8 (µs)",    "T K8/V8 (µs)",  "Δ II (µs/tile)", "Unhidden K8 prep",
                                           "Pipeline penalty", "Extra K16 HBM", "V hidden frac."};
  return section >= 0 && section < ColumnCount ? QVariant(QString::fromUtf8(names[section])) : QVariant();
}

}  // namespace tilepath::ui
