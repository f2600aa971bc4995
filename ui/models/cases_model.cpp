#include "ui/models/cases_model.h"

#include <optional>

#include <QBrush>

#include "core/analysis/gate_table.h"
#include "ui/qt_text.h"

namespace tilepath::ui {

CasesModel::CasesModel(QObject* parent) : QAbstractTableModel(parent) {}

void CasesModel::setCases(std::vector<CaseSummary> cases) {
  setSharedCases(std::make_shared<const std::vector<CaseSummary>>(std::move(cases)));
}

void CasesModel::setSharedCases(std::shared_ptr<const std::vector<CaseSummary>> cases) {
  beginResetModel();
  cases_ = std::move(cases);
  endResetModel();
}

int CasesModel::rowOfCase(std::int64_t caseId) const {
  for (int i = 0; i < static_cast<int>(cases_->size()); ++i)
    if ((*cases_)[i].case_id == caseId) return i;
  return -1;
}

int CasesModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(cases_->size());
}
int CasesModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

namespace {
double metric(const CaseRecord& r, const char* name) { return r.measurement(name).value_or(NAN); }
double quality(const CaseRecord& r, const char* name) {
  for (const QualityRow& q : r.quality)
    if (q.metric == name) return q.value;
  return NAN;
}

}  // namespace

std::optional<qint64> CasesModel::integerSortKey(const CaseSummary& c, int column) {
  const OperatingPoint& op = c.record.op;
  switch (column) {
    case Id:
      return c.case_id;
    case Run:
      return c.run_id;
    case Batch:
      return op.batch;
    case Context:
      return op.context;
    case QHeads:
      return op.q_heads;
    case KvHeads:
      return op.kv_heads;
    case HeadDim:
      return op.head_dim;
  }
  return std::nullopt;
}

QVariant CasesModel::value(const CaseSummary& c, int column, bool forSort) const {
  const CaseRecord& r = c.record;
  const OperatingPoint& op = r.op;
  auto num = [&](double v, int precision) -> QVariant {
    return forSort ? numberOrNull(v) : QVariant(formatNumber(v, precision));
  };
  switch (column) {
    case Id:
      return QVariant::fromValue<qint64>(c.case_id);
    case Run:
      return QVariant::fromValue<qint64>(c.run_id);
    case Backend:
      return qs(c.backend);
    case Device:
      return qs(c.device);
    case Kv:
      return qs(to_string(op.kv));
    case KPath:
      return qs(to_string(op.k_path));
    case Mode:
      return qs(to_string(op.mode));
    case KRepr:
      return qs(to_string(op.k_repr));
    case Mma:
      return qs(to_string(op.mma));
    case Cache:
      return qs(to_string(op.cache));
    case Batch:
      return op.batch;
    case Context:
      return op.context;
    case QHeads:
      return op.q_heads;
    case KvHeads:
      return op.kv_heads;
    case HeadDim:
      return op.head_dim;
    case Status:
      return qs(to_string(r.status));
    case LatencyUs:
      return num(metric(r, "latency_us"), 4);
    case TileIntervalUs:
      return num(metric(r, "tile_interval_us"), 3);
    case FloorFraction:
      return num(metric(r, "floor_fraction"), 3);
    case KernelCheckRelL2:
      return num(quality(r, "kernel_check_rel_l2"), 2);
    case GateRelL2:
      return num(quality(r, "rel_l2"), 2);
    case Kernel:
      return qs(r.kernel.kernel_name);
  }
  return {};
}

QVariant CasesModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(cases_->size())) return {};
  const CaseSummary& c = (*cases_)[index.row()];
  switch (role) {
    case Qt::DisplayRole:
      return value(c, index.column(), false);
    case SortRole:
      return value(c, index.column(), true);
    case CaseIdRole:
      return QVariant::fromValue<qint64>(c.case_id);
    case Qt::ToolTipRole:
      if (index.column() == Status) {
        const std::string message =
            c.record.message.empty() && message_reader_ ? message_reader_(c.case_id) : c.record.message;
        if (!message.empty()) return qs(message);
      }
      if (index.column() == GateRelL2) {
        const std::optional<bool> passed = analysis::gate_passed(c.record);
        if (!passed) return {};
        for (const QualityRow& q : c.record.quality)
          if (q.metric == "rel_l2")
            return tr("Gate on %1 keys against full-precision attention: %2 (worst row; threshold %3)")
                .arg(qs(q.distribution), *passed ? tr("passed") : tr("FAILED"), formatNumber(q.threshold, 3));
      }
      return {};
    case Qt::ForegroundRole:
      if (index.column() == Status && c.record.status != CaseStatus::ok) return QBrush(QColor(180, 30, 30));
      if (index.column() == GateRelL2 && analysis::gate_passed(c.record) == false) return QBrush(QColor(180, 30, 30));
      return {};
    case Qt::TextAlignmentRole:
      switch (index.column()) {
        case Batch:
        case Context:
        case LatencyUs:
        case FloorFraction:
        case TileIntervalUs:
        case QHeads:
        case KvHeads:
        case HeadDim:
        case GateRelL2:
        case KernelCheckRelL2:
          return int(Qt::AlignRight | Qt::AlignVCenter);
      }
      return {};
  }
  return {};
}

QVariant CasesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, orientation, role);
  static const char* names[ColumnCount] = {
      "Case",        "kv",           "K path", "Mode",    "B",      "S",      "Cache", "Latency (µs)",
      "Floor frac.", "Tile II (µs)", "Status", "K repr",  "MMA",    "Hq",     "Hk",    "D",
      "Gate rel L2", "Check rel L2", "Run",    "Backend", "Device", "Kernel",
  };
  return section >= 0 && section < ColumnCount ? QVariant(QString::fromUtf8(names[section])) : QVariant();
}

}  // namespace tilepath::ui
