#include "ui/models/sweep_series_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "ui/qt_text.h"

namespace tilepath::ui {

SweepSeriesModel::SweepSeriesModel(QObject* parent) : QAbstractTableModel(parent) {}

void SweepSeriesModel::setCases(std::vector<CaseSummary> cases) {
  setSharedCases(std::make_shared<const std::vector<CaseSummary>>(std::move(cases)));
}

void SweepSeriesModel::setSharedCases(std::shared_ptr<const std::vector<CaseSummary>> cases) {
  beginResetModel();
  cases_ = std::move(cases);
  rebuild();
  endResetModel();
}

void SweepSeriesModel::setSharedCases(std::shared_ptr<const std::vector<CaseSummary>> cases, SweepAxis axis,
                                      SweepMetric metric, int fixedValue, const QString& backend) {
  cases_ = std::move(cases);  // no signal in between: setQuery's reset covers the new cases
  setQuery(axis, metric, fixedValue, backend);
}

void SweepSeriesModel::setQuery(SweepAxis axis, SweepMetric metric, int fixedValue, const QString& backend) {
  beginResetModel();
  axis_ = axis;
  metric_ = metric;
  fixed_requested_ = fixedValue;
  backend_ = backend;
  rebuild();
  endResetModel();
}

namespace {
// Compared as std::string: 100k cases are not converted to QString on every pass.
bool usable(const CaseSummary& c, const std::string& backend) {
  return c.record.status == CaseStatus::ok && (backend.empty() || c.backend == backend);
}
int heldValue(const CaseSummary& c, SweepAxis axis) {
  return axis == SweepAxis::context ? c.record.op.batch : c.record.op.context;
}
}  // namespace

QStringList sweepBackends(const std::vector<CaseSummary>& cases) {
  std::set<std::string> names;
  for (const CaseSummary& c : cases) names.insert(c.backend);
  QStringList out;
  for (const std::string& name : names) out << qs(name);
  return out;
}

std::map<int, int> sweepHeldValueCounts(const std::vector<CaseSummary>& cases, SweepAxis axis, const QString& backend) {
  const std::string wanted = ss(backend);
  std::map<int, int> counts;
  for (const CaseSummary& c : cases)
    if (usable(c, wanted)) ++counts[heldValue(c, axis)];
  return counts;
}

QList<int> SweepSeriesModel::fixedValues() const {
  QList<int> values;
  for (const auto& [value, count] : sweepHeldValueCounts(*cases_, axis_, backend_)) values << value;
  return values;
}

QStringList SweepSeriesModel::backends() const { return sweepBackends(*cases_); }

void SweepSeriesModel::rebuild() {
  series_.clear();
  points_.clear();
  const std::string backend = ss(backend_);

  // The held dimension: the requested value, else the one with the most cases.
  const std::map<int, int> held_counts = sweepHeldValueCounts(*cases_, axis_, backend_);
  fixed_effective_ = -1;
  if (held_counts.count(fixed_requested_)) {
    fixed_effective_ = fixed_requested_;
  } else {
    int best = -1;
    for (auto [value, count] : held_counts)
      if (count > best) best = count, fixed_effective_ = value;
  }

  const char* metric_name = metric_ == SweepMetric::latency_us       ? "latency_us"
                            : metric_ == SweepMetric::floor_fraction ? "floor_fraction"
                                                                     : "stream_same_bytes_fraction";
  // The cases of the held slice with a finite value, and which backends and mma families they hold.
  struct Shown {
    const CaseSummary* c;
    double y;
  };
  std::vector<Shown> shown;
  std::set<tilepath::Mma> families;
  for (const CaseSummary& c : *cases_) {
    if (!usable(c, backend) || heldValue(c, axis_) != fixed_effective_) continue;
    const std::optional<double> y = c.record.measurement(metric_name);
    if (!y || !std::isfinite(*y)) continue;
    shown.push_back({&c, *y});
    families.insert(c.record.op.mma);
  }
  const bool many_backends = backend_.isEmpty() && sweepBackends(*cases_).size() > 1;
  // The variant label names mma only when it is not mma_sync; where the chart holds both
  // families, every series names its own.
  const bool name_mma = families.size() > 1;
  // (series name) -> (x -> (case id, y)); the newest case wins for a repeated point.
  std::map<QString, SweepSeries> by_name;
  struct Value {
    qint64 case_id;
    double y, low, high;
  };
  std::map<QString, std::map<double, Value>> values;
  const bool latency = metric_ == SweepMetric::latency_us;
  for (const auto& [c_ptr, y] : shown) {
    const CaseSummary& c = *c_ptr;
    const OperatingPoint& op = c.record.op;
    const bool warm = op.cache == CacheState::l2_warm;
    QString variant = qs(op.variant_label());
    if (name_mma && op.mma == tilepath::Mma::mma_sync) variant += QLatin1Char('/') + qs(to_string(op.mma));
    QString name = (many_backends ? qs(c.backend) + QLatin1Char(' ') : QString()) + variant +
                   (warm ? QStringLiteral(" warm") : QStringLiteral(" cold"));
    SweepSeries& s = by_name[name];
    s.name = name;
    s.backend = qs(c.backend);
    s.variant = variant;
    s.warm = warm;
    double x = axis_ == SweepAxis::context ? op.context : op.batch;
    const double low = latency ? c.record.measurement("latency_min_us").value_or(NAN) : NAN;
    const double high = latency ? c.record.measurement("latency_max_us").value_or(NAN) : NAN;
    auto [slot, added] = values[name].try_emplace(x, Value{c.case_id, y, low, high});
    if (!added && c.case_id >= slot->second.case_id) slot->second = {c.case_id, y, low, high};
  }
  for (auto& [name, s] : by_name) {
    for (const auto& [x, v] : values[name]) {
      s.points.emplace_back(x, v.y);
      s.low.push_back(v.low);
      s.high.push_back(v.high);
      points_.push_back({static_cast<int>(series_.size()), x, v.y, v.case_id});
    }
    series_.push_back(std::move(s));
  }
}

int SweepSeriesModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(points_.size());
}
int SweepSeriesModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant SweepSeriesModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(points_.size())) return {};
  if (role != Qt::DisplayRole && role != Qt::UserRole) return {};
  const Point& p = points_[index.row()];
  const SweepSeries& s = series_[p.series];
  switch (index.column()) {
    case SeriesName:
      return s.name;
    case Backend:
      return s.backend;
    case Variant:
      return s.variant;
    case Cache:
      return s.warm ? QStringLiteral("l2_warm") : QStringLiteral("hbm_cold");
    case X:
      return p.x;
    case Y:
      return p.y;
    case CaseId:
      return p.case_id;
  }
  return {};
}

QVariant SweepSeriesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, orientation, role);
  switch (section) {
    case SeriesName:
      return QStringLiteral("Series");
    case Backend:
      return QStringLiteral("Backend");
    case Variant:
      return QStringLiteral("Variant");
    case Cache:
      return QStringLiteral("Cache");
    case X:
      return axis_ == SweepAxis::context ? QStringLiteral("Context") : QStringLiteral("Batch");
    case Y:
      return metric_ == SweepMetric::latency_us ? QStringLiteral("Latency (µs)") : QStringLiteral("Floor fraction");
    case CaseId:
      return QStringLiteral("Case");
  }
  return {};
}

QString sweepPointToolTip(const SweepSeries& s, std::size_t i, SweepAxis axis, SweepMetric metric) {
  if (i >= s.points.size()) return {};
  const QPointF& p = s.points[i];
  const QString x = QStringLiteral("%1 = %2")
                        .arg(axis == SweepAxis::context ? QStringLiteral("context") : QStringLiteral("batch"))
                        .arg(p.x());
  if (metric != SweepMetric::latency_us)
    return QStringLiteral("%1\n%2\n%3").arg(s.name, x, QString::number(p.y(), 'g', 3));
  QString text = QStringLiteral("%1\n%2\nlatency %3 µs").arg(s.name, x, QString::number(p.y(), 'g', 4));
  const double low = i < s.low.size() ? s.low[i] : NAN, high = i < s.high.size() ? s.high[i] : NAN;
  if (std::isfinite(low) && std::isfinite(high))
    text += QStringLiteral("\nrepeats: min %1 µs, max %2 µs (spread %3%)")
                .arg(QString::number(low, 'g', 4), QString::number(high, 'g', 4),
                     QString::number(100 * (high - low) / p.y(), 'f', 1));
  else
    text += QStringLiteral("\nrepeats: min/max not stored");
  return text;
}

}  // namespace tilepath::ui
