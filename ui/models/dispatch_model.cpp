#include "ui/models/dispatch_model.h"

#include <cmath>
#include <set>

#include "core/analysis/gate_table.h"
#include "ui/qt_text.h"

namespace tilepath::ui {

namespace {

// The fastest admitted K16/V16 variant of a point: the speed-up's reference.
const analysis::DispatchCandidate* fastestK16V16(const analysis::DispatchCell& cell) {
  for (const analysis::DispatchCandidate& d : cell.admitted)  // fastest first
    if (d.op.kv == KvDtype::k16v16) return &d;
  return nullptr;
}

double speedup(const analysis::DispatchCell& cell) {
  const analysis::DispatchCandidate* reference = fastestK16V16(cell);
  const analysis::DispatchCandidate* winner = cell.winner();
  if (reference == nullptr || winner == nullptr) return NAN;
  return reference->latency_us / winner->latency_us;
}

QString microseconds(double us) { return formatNumber(us, 3) + QStringLiteral(" µs"); }

bool sameExceptCache(const analysis::DispatchGroup& a, const analysis::DispatchGroup& b) {
  OperatingPoint sa = a.shape, sb = b.shape;
  sa.cache = sb.cache;
  sa.batch = sb.batch;
  sa.context = sb.context;
  return a.backend == b.backend && a.device == b.device && sa == sb;
}

}  // namespace

QString dispatchGroupLabel(const analysis::DispatchGroup& group) {
  const OperatingPoint& s = group.shape;
  return QStringLiteral("%1, %2, Hq/Hk %3/%4, D %5, page %6, %7")
      .arg(qs(group.backend), qs(group.device))
      .arg(s.q_heads)
      .arg(s.kv_heads)
      .arg(s.head_dim)
      .arg(s.page_size)
      .arg(qs(to_string(s.cache)));
}

QString percentText(double fraction) {
  if (!std::isfinite(fraction)) return {};
  return QString::number(100.0 * fraction, 'f', 2) + QLatin1Char('%');
}

QStringList gateDistributions(const std::vector<CaseSummary>& cases) {
  std::set<QString> names;
  for (const CaseSummary& c : cases)
    for (const QualityRow& q : c.record.quality)
      if (analysis::is_gate_row(q)) names.insert(qs(q.distribution));
  return QStringList(names.begin(), names.end());
}

QString dispatchCellText(const analysis::DispatchGroup& group, const analysis::DispatchCell& cell) {
  QStringList lines;
  lines << QStringLiteral("B=%1, S=%2 (%3, %4)")
               .arg(cell.batch)
               .arg(cell.context)
               .arg(qs(to_string(group.shape.cache)), qs(group.backend));
  if (const analysis::DispatchCandidate* w = cell.winner())
    lines
        << QStringLiteral("winner: %1, %2 (case %3)").arg(qs(w->variant), microseconds(w->latency_us)).arg(w->case_id);
  else
    lines << QStringLiteral("winner: none (no admitted variant measured here)");
  if (const analysis::DispatchCandidate* r = cell.runner_up()) {
    lines << QStringLiteral("runner-up: %1, %2 (case %3)")
                 .arg(qs(r->variant), microseconds(r->latency_us))
                 .arg(r->case_id);
    lines << QStringLiteral("margin: %1 (runner-up over winner)").arg(percentText(cell.margin()));
  } else if (cell.winner() != nullptr) {
    lines << QStringLiteral("runner-up: none (one admitted variant), no margin");
  }
  if (const double s = speedup(cell); std::isfinite(s))
    lines << QStringLiteral("speed-up over the fastest K16/V16: %1×").arg(QString::number(s, 'f', 2));
  lines << QStringLiteral("measured cases (fastest first):");
  for (const analysis::DispatchCandidate& d : cell.admitted)
    lines << QStringLiteral("  case %1: %2, %3").arg(d.case_id).arg(qs(d.variant), microseconds(d.latency_us));
  if (!cell.excluded.empty()) {
    lines << QStringLiteral("excluded:");
    for (const analysis::DispatchExclusion& x : cell.excluded)
      lines << QStringLiteral("  case %1: %2, %3").arg(x.case_id).arg(qs(x.variant), qs(x.reason));
  }
  return lines.join(QLatin1Char('\n'));
}

QString crossoverText(const analysis::Crossover& x) {
  const bool along_context = x.axis == "context";
  QStringList cases;
  for (std::int64_t id : x.cases) cases << (id == 0 ? QStringLiteral("-") : QString::number(id));
  return QStringList{
      QStringLiteral("crossover along %1 at %2 ≈ %3 (%4 = %5, between %6 and %7)")
          .arg(along_context ? QStringLiteral("context") : QStringLiteral("batch"),
               along_context ? QStringLiteral("S") : QStringLiteral("B"), formatNumber(x.at, 3),
               along_context ? QStringLiteral("batch") : QStringLiteral("context"))
          .arg(x.held)
          .arg(x.lo)
          .arg(x.hi),
      QStringLiteral("%1 → %2").arg(qs(x.from), qs(x.to)),
      QStringLiteral("margin at %1: %2; at %3: %4")
          .arg(x.lo)
          .arg(std::isfinite(x.margin_lo) ? percentText(x.margin_lo) : QStringLiteral("unmeasured"))
          .arg(x.hi)
          .arg(std::isfinite(x.margin_hi) ? percentText(x.margin_hi) : QStringLiteral("unmeasured")),
      QStringLiteral("cases (from, to at %1; from, to at %2): %3")
          .arg(x.lo)
          .arg(x.hi)
          .arg(cases.join(QStringLiteral(", "))),
  }
      .join(QLatin1Char('\n'));
}

std::vector<DispatchSpeedup> speedupOverK16V16(const analysis::DispatchGroup& group) {
  std::vector<DispatchSpeedup> out;
  for (int batch : group.batches) {
    DispatchSpeedup line{batch, {}};
    for (int context : group.contexts)
      if (const analysis::DispatchCell* cell = group.cell(batch, context))
        if (const double s = speedup(*cell); std::isfinite(s)) line.points.emplace_back(context, s);
    if (!line.points.empty()) out.push_back(std::move(line));
  }
  return out;
}

DispatchModel::DispatchModel(QObject* parent) : QAbstractTableModel(parent) {}

void DispatchModel::setCases(const std::vector<CaseSummary>& cases) {
  setSharedCases(std::make_shared<const std::vector<CaseSummary>>(cases));
}

void DispatchModel::setSharedCases(std::shared_ptr<const std::vector<CaseSummary>> cases) {
  cases_ = std::move(cases);
  gates_ = gateDistributions(*cases_);
  rebuild();
}

void DispatchModel::setGateDistribution(const QString& distribution) {
  if (distribution == gate_) return;
  gate_ = distribution;
  rebuild();
}

void DispatchModel::setGroupIndex(int index) {
  if (index == group_ || index < 0 || index >= static_cast<int>(table_.groups.size())) return;
  beginResetModel();
  chooseGroup(index);
  endResetModel();
  emit tableChanged();
}

const analysis::DispatchGroup* DispatchModel::group() const {
  return group_ >= 0 && group_ < static_cast<int>(table_.groups.size()) ? &table_.groups[group_] : nullptr;
}

bool DispatchModel::groupsDifferOnlyInCache() const {
  for (const analysis::DispatchGroup& g : table_.groups)
    if (!sameExceptCache(g, table_.groups.front())) return false;
  return true;
}

QStringList DispatchModel::groupLabels() const {
  const bool only_cache_differs = groupsDifferOnlyInCache();
  QStringList labels;
  for (const analysis::DispatchGroup& g : table_.groups)
    labels << (only_cache_differs ? qs(to_string(g.shape.cache)) : dispatchGroupLabel(g));
  return labels;
}

void DispatchModel::rebuild() {
  const QString previous = group() ? dispatchGroupLabel(*group()) : QString();
  beginResetModel();
  analysis::DispatchOptions options;
  options.gate_distribution = ss(gate_);
  table_ = analysis::build_dispatch(*cases_, options);
  int pick = -1;
  for (int i = 0; i < static_cast<int>(table_.groups.size()); ++i)
    if (dispatchGroupLabel(table_.groups[i]) == previous) pick = i;
  if (pick < 0) {
    // First the headline case's cache state (HBM-cold) on a GPU backend, as the rest of the GUI starts there.
    int best = -1;
    for (int i = 0; i < static_cast<int>(table_.groups.size()); ++i) {
      const analysis::DispatchGroup& g = table_.groups[i];
      const int score = (g.backend == "cuda" || g.backend == "hip" ? 2 : 0) + (g.shape.cache == CacheState::hbm_cold);
      if (score > best) best = score, pick = i;
    }
  }
  chooseGroup(pick);
  endResetModel();
  emit tableChanged();
}

void DispatchModel::chooseGroup(int index) {
  group_ = index;
  rows_.clear();
  speedups_.clear();
  group_regret_ = {};
  const analysis::DispatchGroup* g = group();
  if (g == nullptr) return;
  for (const auto& [key, cell] : g->cells) {  // ordered by (batch, context)
    rows_.push_back(&cell);
    speedups_.push_back(speedup(cell));
  }
  group_regret_ = analysis::leave_one_out_regret({*g});
}

int DispatchModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}
int DispatchModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant DispatchModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size())) return {};
  const analysis::DispatchCell& cell = *rows_[index.row()];
  const bool sort = role == SortRole;
  if (role == Qt::ToolTipRole) return dispatchCellText(*group(), cell);
  if (role != Qt::DisplayRole && !sort) return {};
  auto num = [&](double v) -> QVariant { return sort ? numberOrNull(v) : QVariant(formatNumber(v, 3)); };
  const analysis::DispatchCandidate* w = cell.winner();
  const analysis::DispatchCandidate* r = cell.runner_up();
  switch (index.column()) {
    case Batch:
      return cell.batch;
    case Context:
      return cell.context;
    case Winner:
      return w ? qs(w->variant) : QString();
    case WinnerUs:
      return num(w ? w->latency_us : NAN);
    case RunnerUp:
      return r ? qs(r->variant) : QString();
    case RunnerUpUs:
      return num(r ? r->latency_us : NAN);
    case Margin:
      return sort ? numberOrNull(cell.margin()) : QVariant(percentText(cell.margin()));
    case SpeedupOverK16V16:
      return num(speedups_[index.row()]);
    case Admitted:
      return static_cast<int>(cell.admitted.size());
    case Excluded: {
      QStringList names;
      for (const analysis::DispatchExclusion& x : cell.excluded) names << qs(x.variant);
      return names.join(QStringLiteral("; "));
    }
    case Cases: {
      QStringList ids;
      for (const analysis::DispatchCandidate& d : cell.admitted) ids << QString::number(d.case_id);
      return ids.join(QLatin1Char(' '));
    }
  }
  return {};
}

QVariant DispatchModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, orientation, role);
  static const char* names[ColumnCount] = {"Batch",
                                           "Context",
                                           "Winner",
                                           "Winner (µs)",
                                           "Runner-up",
                                           "Runner-up (µs)",
                                           "Margin",
                                           "Speed-up over K16/V16",
                                           "Admitted",
                                           "Excluded",
                                           "Cases (fastest first)"};
  return section >= 0 && section < ColumnCount ? QVariant(QString::fromUtf8(names[section])) : QVariant();
}

}  // namespace tilepath::ui
