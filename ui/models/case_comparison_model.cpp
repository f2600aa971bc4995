#include "ui/models/case_comparison_model.h"

#include <cmath>
#include <functional>
#include <set>

#include <QBrush>
#include <QColor>

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

bool startsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// The direction of a stored measurement: times, stalls, bank conflicts, spills and error
// medians are better lower; the floor fraction, bandwidth, hit rate, occupancy and the
// gate's top-k agreement better higher; counts and sizes of the problem are neutral.
Better measurementDirection(const std::string& name, const std::string& unit) {
  static const std::set<std::string> higher = {
      "floor_fraction",      "stream_same_bytes_fraction", "read_bandwidth_gbps",
      "ncu_l2_hit_rate_pct", "ncu_achieved_occupancy_pct", "gate_top8_median",
      "gate_top32_median"};
  static const std::set<std::string> lower = {"gate_rel_l2_median",
                                              "gate_max_abs_median",
                                              "gate_kl_median",
                                              "local_bytes_per_thread",
                                              "unwritten_elements",
                                              "sass_LDL",
                                              "sass_STL"};
  if (higher.count(name)) return Better::higher;
  if (lower.count(name) || unit == "us" || startsWith(name, "ncu_stall_") ||
      startsWith(name, "ncu_smem_bank_conflicts"))
    return Better::lower;
  return Better::neutral;
}

// The unit as it reads after a number.
QString unitText(const std::string& unit) {
  if (unit == "us") return QStringLiteral("µs");
  if (unit == "byte") return QStringLiteral("B");
  if (unit == "bool") return {};
  return qs(unit);
}

QString withUnit(const QString& number, const QString& unit) {
  if (unit.isEmpty()) return number;
  if (unit == QLatin1String("%")) return number + unit;
  return number + QLatin1Char(' ') + unit;
}

const QColor kBetter(20, 120, 40), kWorse(180, 30, 30);

}  // namespace

void CaseComparisonModel::rebuild() {
  rows_.clear();
  const CaseRecord* a = a_ ? &*a_ : nullptr;
  const CaseRecord* b = b_ ? &*b_ : nullptr;
  if (!a && !b) return;

  // Adds one row whose value is computed for each present case.
  auto add = [&](const QString& section, const QString& field, const std::function<QVariant(const CaseRecord&)>& get,
                 const QString& unit = {}, Better better = Better::neutral) {
    rows_.push_back({section, field, a ? get(*a) : QVariant(), b ? get(*b) : QVariant(), unit, better});
  };
  auto text = [](const std::string& s) { return QVariant(qs(s)); };

  const QString op = QStringLiteral("Operating point");
  add(op, QStringLiteral("case"),
      [](const CaseRecord& r) { return QVariant(QStringLiteral("#%1 (run %2)").arg(r.id).arg(r.run_id)); });
  add(op, QStringLiteral("variant"), [&](const CaseRecord& r) { return text(r.op.variant_label()); });
  add(op, QStringLiteral("batch"), [](const CaseRecord& r) { return num(r.op.batch); });
  add(
      op, QStringLiteral("context"), [](const CaseRecord& r) { return num(r.op.context); }, QStringLiteral("tokens"));
  add(op, QStringLiteral("heads q/kv"),
      [](const CaseRecord& r) { return QVariant(QStringLiteral("%1/%2").arg(r.op.q_heads).arg(r.op.kv_heads)); });
  add(op, QStringLiteral("head_dim"), [](const CaseRecord& r) { return num(r.op.head_dim); });
  add(
      op, QStringLiteral("page_size"), [](const CaseRecord& r) { return num(r.op.page_size); },
      QStringLiteral("tokens"));
  add(op, QStringLiteral("k_repr"), [&](const CaseRecord& r) { return text(std::string(to_string(r.op.k_repr))); });
  add(op, QStringLiteral("mma"), [&](const CaseRecord& r) { return text(std::string(to_string(r.op.mma))); });
  add(op, QStringLiteral("scale"), [&](const CaseRecord& r) { return text(std::string(to_string(r.op.scale))); });
  add(op, QStringLiteral("cache"), [&](const CaseRecord& r) { return text(std::string(to_string(r.op.cache))); });
  add(op, QStringLiteral("status"), [&](const CaseRecord& r) { return text(std::string(to_string(r.status))); });

  // Measurements in stored order, the latency and the floor fraction first.
  std::vector<const Measurement*> metrics;
  std::set<std::string> seen;
  for (const char* first : {"latency_us", "floor_fraction", "tile_interval_us"})
    for (const CaseRecord* r : {a, b})
      if (r)
        for (const Measurement& m : r->measurements)
          if (m.name == first && seen.insert(m.name).second) metrics.push_back(&m);
  for (const CaseRecord* r : {a, b})
    if (r)
      for (const Measurement& m : r->measurements)
        if (seen.insert(m.name).second) metrics.push_back(&m);
  for (const Measurement* m : metrics) {
    const std::string name = m->name;
    add(
        QStringLiteral("Measurements"), qs(name),
        [name](const CaseRecord& r) { return num(r.measurement(name).value_or(NAN)); }, unitText(m->unit),
        measurementDirection(m->name, m->unit));
  }

  for (Stage s : {Stage::k_load, Stage::k_prep, Stage::qk, Stage::k_bias, Stage::softmax, Stage::v_load, Stage::v_prep,
                  Stage::pv, Stage::accum, Stage::q_quant, Stage::combine}) {
    for (CostMethod m : {CostMethod::isolated, CostMethod::removed, CostMethod::doubled, CostMethod::model}) {
      bool present = (a && std::isfinite(stageCost(*a, s, m))) || (b && std::isfinite(stageCost(*b, s, m)));
      if (!present) continue;
      add(
          QStringLiteral("Stage costs (µs/tile)"), QStringLiteral("%1 (%2)").arg(qs(to_string(s)), qs(to_string(m))),
          [s, m](const CaseRecord& r) { return num(stageCost(r, s, m)); }, QStringLiteral("µs/tile"), Better::lower);
    }
  }

  const QString k = QStringLiteral("Kernel");
  add(k, QStringLiteral("kernel_name"), [&](const CaseRecord& r) { return text(r.kernel.kernel_name); });
  add(k, QStringLiteral("cubin_sha256"), [&](const CaseRecord& r) { return text(r.kernel.cubin_sha256); });
  add(
      k, QStringLiteral("regs_per_thread"), [](const CaseRecord& r) { return num(r.kernel.regs_per_thread); },
      QStringLiteral("regs"));
  add(
      k, QStringLiteral("smem_static_bytes"), [](const CaseRecord& r) { return num(r.kernel.smem_static_bytes); },
      QStringLiteral("B"));
  add(
      k, QStringLiteral("smem_dynamic_bytes"), [](const CaseRecord& r) { return num(r.kernel.smem_dynamic_bytes); },
      QStringLiteral("B"));
  add(
      k, QStringLiteral("occupancy_theoretical"),
      [](const CaseRecord& r) { return num(r.kernel.occupancy_theoretical); }, {}, Better::higher);
  add(
      k, QStringLiteral("occupancy_achieved"), [](const CaseRecord& r) { return num(r.kernel.occupancy_achieved); }, {},
      Better::higher);
  add(k, QStringLiteral("grid"), [](const CaseRecord& r) { return QVariant(dims(r.kernel.grid)); });
  add(k, QStringLiteral("block"), [](const CaseRecord& r) { return QVariant(dims(r.kernel.block)); });
  add(k, QStringLiteral("splits"), [](const CaseRecord& r) { return num(r.kernel.splits); });

  const QString p = QStringLiteral("Prediction");
  auto firstPrediction = [](const CaseRecord& r) -> const PredictionRow* {
    return r.predictions.empty() ? nullptr : &r.predictions.front();
  };
  add(
      p, QStringLiteral("predicted II (µs)"),
      [=](const CaseRecord& r) {
        auto* x = firstPrediction(r);
        return x ? num(x->ii_us) : QVariant();
      },
      QStringLiteral("µs"), Better::lower);
  add(p, QStringLiteral("limiting stage"), [=](const CaseRecord& r) {
    auto* x = firstPrediction(r);
    return x ? QVariant(qs(x->limiting_stage)) : QVariant();
  });
  add(
      p, QStringLiteral("overlap efficiency"),
      [=](const CaseRecord& r) {
        auto* x = firstPrediction(r);
        return x ? num(x->overlap_efficiency) : QVariant();
      },
      {}, Better::higher);

  std::vector<std::pair<std::string, std::string>> quality_keys;
  std::set<std::pair<std::string, std::string>> seen_q;
  for (const CaseRecord* r : {a, b})
    if (r)
      for (const QualityRow& q : r->quality)
        if (seen_q.insert({q.metric, q.distribution}).second) quality_keys.push_back({q.metric, q.distribution});
  for (const auto& [metric, dist] : quality_keys) {
    // Errors are better lower; the top-k agreement better higher.
    const Better better = startsWith(metric, "top") ? Better::higher : Better::lower;
    add(
        QStringLiteral("Error"), QStringLiteral("%1 [%2]").arg(qs(metric), qs(dist)),
        [metric, dist](const CaseRecord& r) {
          for (const QualityRow& q : r.quality)
            if (q.metric == metric && q.distribution == dist) return num(q.value);
          return QVariant();
        },
        {}, better);
  }
}

int CaseComparisonModel::rowOf(const QString& section, const QString& field) const {
  for (int i = 0; i < static_cast<int>(rows_.size()); ++i)
    if (rows_[i].section == section && rows_[i].field == field) return i;
  return -1;
}

int CaseComparisonModel::verdict(int row) const {
  if (row < 0 || row >= static_cast<int>(rows_.size())) return 0;
  const Row& r = rows_[row];
  const QVariant difference = cellValue(r, Difference);
  if (!difference.isValid() || r.better == Better::neutral) return 0;
  const double d = difference.toDouble();
  if (d == 0) return 0;
  return (d < 0) == (r.better == Better::lower) ? 1 : -1;
}

int CaseComparisonModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}
int CaseComparisonModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant CaseComparisonModel::cellValue(const Row& row, int column) const {
  const bool numbers = row.a.typeId() == QMetaType::Double && row.b.typeId() == QMetaType::Double;
  switch (column) {
    case CaseA:
      return row.a.typeId() == QMetaType::Double ? row.a : QVariant();
    case CaseB:
      return row.b.typeId() == QMetaType::Double ? row.b : QVariant();
    case Difference:
      return numbers ? QVariant(row.b.toDouble() - row.a.toDouble()) : QVariant();
    case Ratio:
      // A ratio to zero is no number: left unknown.
      return numbers && row.a.toDouble() != 0 ? QVariant(row.b.toDouble() / row.a.toDouble()) : QVariant();
  }
  return {};
}

QVariant CaseComparisonModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size())) return {};
  const Row& row = rows_[index.row()];
  const int column = index.column();
  const bool numeric = row.a.typeId() == QMetaType::Double || row.b.typeId() == QMetaType::Double;
  switch (role) {
    case ValueRole:
      return cellValue(row, column);
    case SectionRole:
      return row.section;
    case Qt::ToolTipRole:
      if (column == Field) return QStringLiteral("%1: %2").arg(row.section, row.field);
      return {};
    case Qt::TextAlignmentRole:
      return column != Field && numeric ? QVariant(int(Qt::AlignRight | Qt::AlignVCenter)) : QVariant();
    case Qt::ForegroundRole: {
      if (column != Difference && column != Ratio) return {};
      const int v = verdict(index.row());
      return v > 0 ? QVariant(QBrush(kBetter)) : v < 0 ? QVariant(QBrush(kWorse)) : QVariant();
    }
    case Qt::DisplayRole:
      break;
    default:
      return {};
  }
  auto show = [&](const QVariant& v) -> QVariant {
    if (v.typeId() == QMetaType::Double) return withUnit(formatNumber(v.toDouble(), 4), row.unit);
    return v;
  };
  switch (column) {
    case Field:
      return row.field;
    case CaseA:
      return show(row.a);
    case CaseB:
      return show(row.b);
    case Difference: {
      const QVariant d = cellValue(row, Difference);
      if (!d.isValid()) return {};
      const double x = d.toDouble();
      return withUnit((x > 0 ? QStringLiteral("+") : QString()) + formatNumber(x, 4), row.unit);
    }
    case Ratio: {
      const QVariant r = cellValue(row, Ratio);
      return r.isValid() ? QVariant(formatNumber(r.toDouble(), 3) + QStringLiteral("×")) : QVariant();
    }
  }
  return {};
}

QVariant CaseComparisonModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, orientation, role);
  switch (section) {
    case Field:
      return QStringLiteral("Field");
    case CaseA:
      return a_ ? QStringLiteral("A: #%1").arg(a_->id) : QStringLiteral("A");
    case CaseB:
      return b_ ? QStringLiteral("B: #%1").arg(b_->id) : QStringLiteral("B");
    case Difference:
      return QStringLiteral("B − A");
    case Ratio:
      return QStringLiteral("B / A");
  }
  return {};
}

}  // namespace tilepath::ui
