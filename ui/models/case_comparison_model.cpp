#include "ui/models/case_comparison_model.h"

#include <cmath>
#include <functional>
#include <set>

#include <QBrush>
#include <QFont>

#include "ui/qt_text.h"

namespace tilepath::ui {

CaseComparisonModel::CaseComparisonModel(QObject* parent) : QAbstractTableModel(parent) {}

void CaseComparisonModel::setCases(std::optional<CaseRecord> a, std::optional<CaseRecord> b) {
  beginResetModel();
  a_ = std::move(a);
  b_ = std::move(b);
  rebuild();
  endResetModel();
}

namespace {

QVariant num(double v) { return std::isfinite(v) ? QVariant(v) : QVariant(); }
QVariant num(int v) { return v >= 0 ? QVariant(double(v)) : QVariant(); }
QString dims(const int d[3]) { return QStringLiteral("%1×%2×%3").arg(d[0]).arg(d[1]).arg(d[2]); }

double stageCost(const CaseRecord& r, Stage s, CostMethod m) {
  for (const StageCostRow& row : r.stage_costs)
    if (row.stage == s && row.method == m) return row.cost_us;
  return NAN;
}

}  // namespace

void CaseComparisonModel::rebuild() {
  rows_.clear();
  const CaseRecord* a = a_ ? &*a_ : nullptr;
  const CaseRecord* b = b_ ? &*b_ : nullptr;
  if (!a && !b) return;

  // Adds one row whose value is computed for each present case.
  auto add = [&](const QString& section, const QString& field, const std::function<QVariant(const CaseRecord&)>& get) {
    rows_.push_back({section, field, a ? get(*a) : QVariant(), b ? get(*b) : QVariant()});
  };

  const QString op = QStringLiteral("Operating point");
  add(op, QStringLiteral("case"),
      [](const CaseRecord& r) { return QVariant(QStringLiteral("#%1 (run %2)").arg(r.id).arg(r.run_id)); });
  add(op, QStringLiteral("variant"), [](const CaseRecord& r) { return QVariant(qs(r.op.variant_label())); });
  add(op, QStringLiteral("batch"), [](const CaseRecord& r) { return num(r.op.batch); });
  add(op, QStringLiteral("context"), [](const CaseRecord& r) { return num(r.op.context); });
  add(op, QStringLiteral("heads q/kv"),
      [](const CaseRecord& r) { return QVariant(QStringLiteral("%1/%2").arg(r.op.q_heads).arg(r.op.kv_heads)); });
  add(op, QStringLiteral("head_dim"), [](const CaseRecord& r) { return num(r.op.head_dim); });
  add(op, QStringLiteral("page_size"), [](const CaseRecord& r) { return num(r.op.page_size); });
  add(op, QStringLiteral("k_repr"), [](const CaseRecord& r) { return QVariant(qs(to_string(r.op.k_repr))); });
  add(op, QStringLiteral("mma"), [](const CaseRecord& r) { return QVariant(qs(to_string(r.op.mma))); });
  add(op, QStringLiteral("scale"), [](const CaseRecord& r) { return QVariant(qs(to_string(r.op.scale))); });
  add(op, QStringLiteral("cache"), [](const CaseRecord& r) { return QVariant(qs(to_string(r.op.cache))); });
  add(op, QStringLiteral("status"), [](const CaseRecord& r) { return QVariant(qs(to_string(r.status))); });

  std::vector<std::string> metric_names;
  std::set<std::string> seen;
  for (const CaseRecord* r : {a, b})
    if (r)
      for (const Measurement& m : r->measurements)
        if (seen.insert(m.name).second) metric_names.push_back(m.name);
  for (const std::string& name : metric_names)
    add(QStringLiteral("Measurements"), qs(name),
        [name](const CaseRecord& r) { return num(r.measurement(name).value_or(NAN)); });

  for (Stage s : {Stage::k_load, Stage::k_prep, Stage::qk, Stage::k_bias, Stage::softmax, Stage::v_load, Stage::v_prep,
                  Stage::pv, Stage::accum, Stage::q_quant, Stage::combine}) {
    for (CostMethod m : {CostMethod::isolated, CostMethod::removed, CostMethod::doubled, CostMethod::model}) {
      bool present = (a && std::isfinite(stageCost(*a, s, m))) || (b && std::isfinite(stageCost(*b, s, m)));
      if (!present) continue;
      add(QStringLiteral("Stage costs (µs/tile)"), QStringLiteral("%1 (%2)").arg(qs(to_string(s)), qs(to_string(m))),
          [s, m](const CaseRecord& r) { return num(stageCost(r, s, m)); });
    }
  }

  const QString k = QStringLiteral("Kernel");
  add(k, QStringLiteral("kernel_name"), [](const CaseRecord& r) { return QVariant(qs(r.kernel.kernel_name)); });
  add(k, QStringLiteral("cubin_sha256"), [](const CaseRecord& r) { return QVariant(qs(r.kernel.cubin_sha256)); });
  add(k, QStringLiteral("regs_per_thread"), [](const CaseRecord& r) { return num(r.kernel.regs_per_thread); });
  add(k, QStringLiteral("smem_static_bytes"), [](const CaseRecord& r) { return num(r.kernel.smem_static_bytes); });
  add(k, QStringLiteral("smem_dynamic_bytes"), [](const CaseRecord& r) { return num(r.kernel.smem_dynamic_bytes); });
  add(k, QStringLiteral("occupancy_theoretical"),
      [](const CaseRecord& r) { return num(r.kernel.occupancy_theoretical); });
  add(k, QStringLiteral("occupancy_achieved"), [](const CaseRecord& r) { return num(r.kernel.occupancy_achieved); });
  add(k, QStringLiteral("grid"), [](const CaseRecord& r) { return QVariant(dims(r.kernel.grid)); });
  add(k, QStringLiteral("block"), [](const CaseRecord& r) { return QVariant(dims(r.kernel.block)); });
  add(k, QStringLiteral("splits"), [](const CaseRecord& r) { return num(r.kernel.splits); });

  const QString p = QStringLiteral("Prediction");
  auto firstPrediction = [](const CaseRecord& r) -> const PredictionRow* {
    return r.predictions.empty() ? nullptr : &r.predictions.front();
  };
  add(p, QStringLiteral("predicted II (µs)"), [=](const CaseRecord& r) {
    auto* x = firstPrediction(r);
    return x ? num(x->ii_us) : QVariant();
  });
  add(p, QStringLiteral("limiting stage"), [=](const CaseRecord& r) {
    auto* x = firstPrediction(r);
    return x ? QVariant(qs(x->limiting_stage)) : QVariant();
  });
  add(p, QStringLiteral("overlap efficiency"), [=](const CaseRecord& r) {
    auto* x = firstPrediction(r);
    return x ? num(x->overlap_efficiency) : QVariant();
  });

  std::vector<std::pair<std::string, std::string>> quality_keys;
  std::set<std::pair<std::string, std::string>> seen_q;
  for (const CaseRecord* r : {a, b})
    if (r)
      for (const QualityRow& q : r->quality)
        if (seen_q.insert({q.metric, q.distribution}).second) quality_keys.push_back({q.metric, q.distribution});
  for (const auto& [metric, dist] : quality_keys) {
    add(QStringLiteral("Error"), QStringLiteral("%1 [%2]").arg(qs(metric), qs(dist)),
        [metric, dist](const CaseRecord& r) {
          for (const QualityRow& q : r.quality)
            if (q.metric == metric && q.distribution == dist) return num(q.value);
          return QVariant();
        });
  }
}

int CaseComparisonModel::rowOf(const QString& section, const QString& field) const {
  for (int i = 0; i < static_cast<int>(rows_.size()); ++i)
    if (rows_[i].section == section && rows_[i].field == field) return i;
  return -1;
}

int CaseComparisonModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}
int CaseComparisonModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant CaseComparisonModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size())) return {};
  const Row& row = rows_[index.row()];
  const bool numeric = row.a.typeId() == QMetaType::Double || row.b.typeId() == QMetaType::Double;
  auto show = [](const QVariant& v) -> QVariant {
    if (v.typeId() == QMetaType::Double) return formatNumber(v.toDouble(), 4);
    return v;
  };
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Section:
        return row.section;
      case Field:
        return row.field;
      case CaseA:
        return show(row.a);
      case CaseB:
        return show(row.b);
      case Delta:
        if (numeric && row.a.isValid() && row.b.isValid()) return formatNumber(row.b.toDouble() - row.a.toDouble(), 4);
        if (!numeric && row.a.isValid() && row.b.isValid() && row.a != row.b) return QStringLiteral("differs");
        return {};
    }
  }
  if (role == Qt::ForegroundRole && index.column() == Delta && numeric && row.a.isValid() && row.b.isValid()) {
    double d = row.b.toDouble() - row.a.toDouble();
    if (d > 0) return QBrush(QColor(180, 30, 30));
    if (d < 0) return QBrush(QColor(20, 120, 40));
  }
  if (role == Qt::TextAlignmentRole && index.column() >= CaseA && numeric)
    return int(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

QVariant CaseComparisonModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, orientation, role);
  switch (section) {
    case Section:
      return QStringLiteral("Section");
    case Field:
      return QStringLiteral("Field");
    case CaseA:
      return a_ ? QStringLiteral("A: #%1").arg(a_->id) : QStringLiteral("A");
    case CaseB:
      return b_ ? QStringLiteral("B: #%1").arg(b_->id) : QStringLiteral("B");
    case Delta:
      return QStringLiteral("B − A");
  }
  return {};
}

}  // namespace tilepath::ui
