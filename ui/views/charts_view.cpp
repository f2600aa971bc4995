#include "ui/views/charts_view.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <map>

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QCursor>
#include <QFontMetrics>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QListWidget>
#include <QLogValueAxis>
#include <QMenu>
#include <QPainter>
#include <QPixmap>
#include <QPushButton>
#include <QScatterSeries>
#include <QSignalBlocker>
#include <QSplitter>
#include <QToolTip>
#include <QVBoxLayout>
#include <QValueAxis>

#include "ui/models/sweep_series_model.h"
#include "ui/views/charts_view_whiskers.h"
#include "ui/views/variant_palette.h"

namespace tilepath::ui {

namespace {

// The series colour: the variant's own (ui/views/variant_palette), the same in the dispatch
// map and in every database; the "/mma_sync" a chart adds when it shows both families
// does not change it.
QColor seriesColour(const QString& variant) {
  QString label = variant;
  if (label.endsWith(QStringLiteral("/mma_sync"))) label.chop(int(std::strlen("/mma_sync")));
  return variantColour(label);
}

}  // namespace

// The marker shape of a variant's path/mode, so variants stay apart where colours are close.
MarkerShape markerShapeOf(const QString& variant) {
  if (variant.contains(QStringLiteral("/separate_kv"))) return MarkerShape::triangle;
  if (variant.contains(QStringLiteral("/k_only"))) return MarkerShape::square;
  if (variant.contains(QStringLiteral("/full"))) return MarkerShape::circle;
  return MarkerShape::diamond;  // K16 paths and fp8_qk of K8/V16: no mode
}

namespace {

void drawMarker(QPainter& painter, MarkerShape shape, QPointF c, double r) {
  switch (shape) {
    case MarkerShape::circle:
      painter.drawEllipse(c, r, r);
      break;
    case MarkerShape::square:
      painter.drawRect(QRectF(c.x() - r, c.y() - r, 2 * r, 2 * r));
      break;
    case MarkerShape::triangle:
      painter.drawPolygon(
          QPolygonF({QPointF(c.x(), c.y() - r), QPointF(c.x() + r, c.y() + r), QPointF(c.x() - r, c.y() + r)}));
      break;
    case MarkerShape::diamond:
      painter.drawPolygon(QPolygonF({QPointF(c.x(), c.y() - r), QPointF(c.x() + r, c.y()), QPointF(c.x(), c.y() + r),
                                     QPointF(c.x() - r, c.y())}));
      break;
  }
}

// The point marker of a series: its shape filled with the series colour (hollow for a pre-biased K).
QImage markerImage(const QString& variant) {
  QImage image(12, 12, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::transparent);
  QPainter painter(&image);
  painter.setRenderHint(QPainter::Antialiasing);
  const QColor colour = seriesColour(variant);
  painter.setPen(QPen(colour.darker(130), 1.2));
  painter.setBrush(variant.contains(QStringLiteral("/prebias")) ? QBrush(Qt::white) : QBrush(colour));
  drawMarker(painter, markerShapeOf(variant), QPointF(6, 6), 4.5);
  return image;
}

// A legend swatch: the series colour as a solid (warm) or dashed (cold) line.
QIcon seriesIcon(const QString& variant, bool warm) {
  const QColor colour = seriesColour(variant);
  QPixmap pixmap(36, 14);
  pixmap.fill(Qt::transparent);
  QPainter painter(&pixmap);
  painter.setRenderHint(QPainter::Antialiasing);
  painter.setPen(QPen(colour, 2.5, warm ? Qt::SolidLine : Qt::DashLine));
  painter.drawLine(2, 7, 34, 7);
  painter.setBrush(variant.contains(QStringLiteral("/prebias")) ? QBrush(Qt::white) : QBrush(colour));
  painter.setPen(QPen(colour.darker(130), 1.2));
  drawMarker(painter, markerShapeOf(variant), QPointF(18, 7), 4);
  return QIcon(pixmap);
}

}  // namespace

ChartsView::ChartsView(QWidget* parent) : QWidget(parent) {
  latency_model_ = new SweepSeriesModel(this);
  floor_model_ = new SweepSeriesModel(this);
  latency_chart_ = new QChart;
  floor_chart_ = new QChart;
  latency_view_ = new QChartView(latency_chart_);
  floor_view_ = new QChartView(floor_chart_);
  for (QChartView* v : {latency_view_, floor_view_}) v->setRenderHint(QPainter::Antialiasing);
  latency_whiskers_ = new ChartWhiskers(latency_chart_);
  floor_whiskers_ = new ChartWhiskers(floor_chart_);

  axis_ = new QComboBox;
  axis_->addItems({tr("vs context (hold batch)"), tr("vs batch (hold context)")});
  fixed_ = new QComboBox;
  fixed_label_ = new QLabel(tr("batch ="));
  backend_ = new QComboBox;
  backend_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  connect(axis_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_) return;
    refillFilters();
    requery();
  });
  connect(fixed_, &QComboBox::currentIndexChanged, this, [this] {
    if (!updating_) requery();
  });
  lower_metric_ = new QComboBox;
  lower_metric_->setObjectName(QStringLiteral("chartsLowerMetric"));
  lower_metric_->addItem(tr("fraction of the byte floor"), static_cast<int>(SweepMetric::floor_fraction));
  lower_metric_->addItem(tr("fraction of a perfect stream"), static_cast<int>(SweepMetric::stream_fraction));
  lower_metric_->setToolTip(
      tr("Byte floor: bytes / read bandwidth. Perfect stream: the read kernel alone over the "
         "case's bytes, timed the same way (launch and ramp included); measured by the cuda "
         "backend"));
  connect(lower_metric_, &QComboBox::currentIndexChanged, this, [this] {
    if (!updating_) requery();
  });
  connect(backend_, &QComboBox::activated, this, [this] { backend_chosen_ = true; });
  connect(backend_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_) return;
    refillFilters();
    requery();
  });

  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("X axis:")));
  controls->addWidget(axis_);
  controls->addWidget(fixed_label_);
  controls->addWidget(fixed_);
  controls->addWidget(new QLabel(tr("backend:")));
  controls->addWidget(backend_);
  controls->addWidget(new QLabel(tr("lower chart:")));
  controls->addWidget(lower_metric_);
  auto* hint = new QLabel(tr("solid: L2-warm, dashed: HBM-cold"));
  hint->setToolTip(tr("Untick a legend entry to hide that series in both charts"));
  controls->addWidget(hint);
  controls->addStretch();
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(latency_view_);
  split->addWidget(floor_view_);
  legend_ = new QListWidget;
  legend_->setObjectName(QStringLiteral("chartsLegend"));
  legend_->setIconSize(QSize(36, 14));
  // Names are whole (no "…"): the legend is as wide as its longest entry (rebuildLegend).
  legend_->setTextElideMode(Qt::ElideNone);
  legend_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  legend_->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(legend_, &QListWidget::itemChanged, this,
          [this](QListWidgetItem* item) { setSeriesVisible(item->text(), item->checkState() == Qt::Checked); });
  connect(legend_, &QListWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
    QListWidgetItem* item = legend_->itemAt(pos);
    QMenu menu;
    if (item) {
      const QString name = item->text();
      menu.addAction(tr("Show only %1").arg(name), this, [this, name] { showOnlySeries(name); });
    }
    menu.addAction(tr("Show all"), this, &ChartsView::showAllSeries);
    menu.addAction(tr("Hide all"), this, &ChartsView::hideAllSeries);
    menu.exec(legend_->viewport()->mapToGlobal(pos));
  });
  auto* show_all = new QPushButton(tr("Show all"));
  show_all->setObjectName(QStringLiteral("chartsShowAll"));
  connect(show_all, &QPushButton::clicked, this, &ChartsView::showAllSeries);
  auto* hide_all = new QPushButton(tr("Hide all"));
  hide_all->setObjectName(QStringLiteral("chartsHideAll"));
  connect(hide_all, &QPushButton::clicked, this, &ChartsView::hideAllSeries);
  auto* legend_buttons = new QHBoxLayout;
  legend_buttons->addWidget(show_all);
  legend_buttons->addWidget(hide_all);
  auto* legend_column = new QVBoxLayout;
  legend_column->addWidget(legend_, 1);
  legend_column->addLayout(legend_buttons);
  auto* legend_hint = new QLabel(tr("right-click an entry: show only it"));
  legend_hint->setWordWrap(true);
  legend_column->addWidget(legend_hint);
  auto* body = new QHBoxLayout;
  body->addWidget(split, 1);
  body->addLayout(legend_column);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(controls);
  layout->addLayout(body, 1);
}

void ChartsView::setSeriesVisible(const QString& name, bool visible) {
  if (visible)
    hidden_.erase(name);
  else
    hidden_.insert(name);
  applyVisibility();
}

void ChartsView::hideAllSeries() {
  for (const SweepSeriesModel* model : {latency_model_, floor_model_})
    for (const SweepSeries& s : model->series()) hidden_.insert(s.name);
  applyVisibility();
}

void ChartsView::showAllSeries() {
  hidden_.clear();
  applyVisibility();
}

void ChartsView::showOnlySeries(const QString& name) {
  for (const SweepSeriesModel* model : {latency_model_, floor_model_})
    for (const SweepSeries& s : model->series())
      if (s.name != name) hidden_.insert(s.name);
  hidden_.erase(name);
  applyVisibility();
}

void ChartsView::followOperatingPoint(const OperatingPoint& op) {
  followed_ = op;
  const int held = axis_->currentIndex() == 0 ? op.batch : op.context;
  const int index = fixed_->findData(held);
  if (index < 0 || index == fixed_->currentIndex()) return;
  fixed_->setCurrentIndex(index);  // → requery
}

void ChartsView::applyVisibility() {
  for (QChart* chart : {latency_chart_, floor_chart_})
    for (QAbstractSeries* series : chart->series()) series->setVisible(!hidden_.count(series->name()));
  {
    const QSignalBlocker blocker(legend_);
    for (int i = 0; i < legend_->count(); ++i)
      legend_->item(i)->setCheckState(hidden_.count(legend_->item(i)->text()) ? Qt::Unchecked : Qt::Checked);
  }
  rescaleY(latency_chart_, *latency_model_, true);
  rescaleY(floor_chart_, *floor_model_, false);
  latency_whiskers_->update();
  floor_whiskers_->update();
}

// The y range covers the visible series only: hiding a slow series lets the rest fill the chart.
void ChartsView::rescaleY(QChart* chart, const SweepSeriesModel& model, bool logY) {
  double ymin = INFINITY, ymax = -INFINITY;
  for (const SweepSeries& s : model.series()) {
    if (hidden_.count(s.name)) continue;
    for (std::size_t i = 0; i < s.points.size(); ++i) {
      // The whiskers too: the slowest repeat stays inside the chart.
      const double low = i < s.low.size() && std::isfinite(s.low[i]) ? s.low[i] : s.points[i].y();
      const double high = i < s.high.size() && std::isfinite(s.high[i]) ? s.high[i] : s.points[i].y();
      ymin = std::min({ymin, s.points[i].y(), low});
      ymax = std::max({ymax, s.points[i].y(), high});
    }
  }
  if (!std::isfinite(ymin)) return;  // nothing visible: keep the last range
  const QList<QAbstractAxis*> axes = chart->axes(Qt::Vertical);
  if (axes.isEmpty()) return;
  if (auto* ly = qobject_cast<QLogValueAxis*>(axes.front()))
    ly->setRange(ymin / 1.5, ymax * 1.5);
  else if (auto* y = qobject_cast<QValueAxis*>(axes.front())) {
    y->setRange(0, logY ? ymax * 1.1 : std::max(1.0, ymax * 1.1));
    y->applyNiceNumbers();  // round tick values (5, 10, 15 …) instead of range/4 steps
  }
}

void ChartsView::rebuildLegend() {
  const QSignalBlocker blocker(legend_);
  legend_->clear();
  std::set<QString> names;
  for (const SweepSeriesModel* model : {latency_model_, floor_model_})
    for (const SweepSeries& s : model->series()) {
      if (!names.insert(s.name).second) continue;
      auto* item = new QListWidgetItem(seriesIcon(s.variant, s.warm), s.name, legend_);
      item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
      item->setCheckState(hidden_.count(s.name) ? Qt::Unchecked : Qt::Checked);
    }
  // Wide enough for the longest name beside its swatch and check box.
  legend_->setMinimumWidth(legend_->sizeHintForColumn(0) + 2 * legend_->frameWidth() + 8);
}

void ChartsView::setAxis(int axisIndex) { axis_->setCurrentIndex(axisIndex); }

void ChartsView::setLowerMetric(int metricIndex) { lower_metric_->setCurrentIndex(metricIndex); }

void ChartsView::setCases(const std::vector<CaseSummary>& cases) {
  setSharedCases(std::make_shared<const std::vector<CaseSummary>>(cases));
}

void ChartsView::setSharedCases(std::shared_ptr<const std::vector<CaseSummary>> cases) {
  // The models get the cases with their query (requery): one pass each over 100k cases.
  cases_ = std::move(cases);
  updating_ = true;
  const QString previous = backend_->currentText();
  backend_->clear();
  backend_->addItem(tr("all"), QString());
  for (const QString& b : sweepBackends(*cases_)) backend_->addItem(b, b);
  // Prefer a GPU backend's data when present: it is what the charts are for.
  int keep = backend_chosen_ ? backend_->findText(previous) : -1;
  if (keep < 0) {
    for (const char* preferred : {"cuda", "hip", "sim", "cpu"}) {
      keep = backend_->findText(QString::fromLatin1(preferred));
      if (keep >= 0) break;
    }
  }
  backend_->setCurrentIndex(std::max(0, keep));
  updating_ = false;
  refillFilters();
  requery();
}

void ChartsView::refillFilters() {
  updating_ = true;
  const SweepAxis axis = axis_->currentIndex() == 0 ? SweepAxis::context : SweepAxis::batch;
  const std::map<int, int> counts = sweepHeldValueCounts(*cases_, axis, backend_->currentData().toString());
  const int previous = fixed_->currentData().isValid() ? fixed_->currentData().toInt() : -1;
  fixed_->clear();
  int most_common = -1, most = 0;
  for (const auto& [value, count] : counts) {
    fixed_->addItem(QString::number(value), value);
    if (count > most) most = count, most_common = value;
  }
  int keep = followed_ ? fixed_->findData(axis == SweepAxis::context ? followed_->batch : followed_->context) : -1;
  if (keep < 0) keep = fixed_->findData(previous);
  if (keep < 0) keep = fixed_->findData(most_common);
  fixed_->setCurrentIndex(std::max(0, keep));
  fixed_label_->setText(axis == SweepAxis::context ? tr("batch =") : tr("context ="));
  updating_ = false;
}

void ChartsView::requery() {
  const SweepAxis axis = axis_->currentIndex() == 0 ? SweepAxis::context : SweepAxis::batch;
  const int fixed = fixed_->currentData().isValid() ? fixed_->currentData().toInt() : -1;
  const QString backend = backend_->currentData().toString();
  latency_model_->setSharedCases(cases_, axis, SweepMetric::latency_us, fixed, backend);
  floor_model_->setSharedCases(cases_, axis, static_cast<SweepMetric>(lower_metric_->currentData().toInt()), fixed,
                               backend);
  rebuildChart(latency_chart_, latency_whiskers_, *latency_model_, tr("latency (µs)"), true);
  rebuildChart(floor_chart_, floor_whiskers_, *floor_model_, lower_metric_->currentText(), false);
  rebuildLegend();
  applyVisibility();
}

void ChartsView::rebuildChart(QChart* chart, ChartWhiskers* whiskers, const SweepSeriesModel& model,
                              const QString& yTitle, bool logY) {
  whiskers->clear();
  chart->removeAllSeries();
  for (QAbstractAxis* a : chart->axes()) {
    chart->removeAxis(a);
    delete a;
  }
  const bool by_context = model.axis() == SweepAxis::context;
  chart->setTitle(QStringLiteral("%1 vs %2 (%3 = %4)")
                      .arg(yTitle, by_context ? tr("context") : tr("batch"), by_context ? tr("batch") : tr("context"))
                      .arg(model.fixedValue()));

  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  for (const SweepSeries& s : model.series())
    for (const QPointF& p : s.points) {
      xmin = std::min(xmin, p.x());
      xmax = std::max(xmax, p.x());
      ymin = std::min(ymin, p.y());
      ymax = std::max(ymax, p.y());
    }

  auto* x_axis = new QLogValueAxis;
  x_axis->setBase(2);
  x_axis->setLabelFormat(QStringLiteral("%g"));
  x_axis->setTitleText(by_context ? tr("context (tokens, log2)") : tr("batch (log2)"));
  QAbstractAxis* y_axis = nullptr;
  if (logY && ymin > 0 && ymax / ymin > 30) {  // log only when the data spans decades
    auto* y = new QLogValueAxis;
    y->setBase(10);
    y->setLabelFormat(QStringLiteral("%g"));
    y->setMinorTickCount(8);
    y_axis = y;
  } else {
    auto* y = new QValueAxis;
    y->setLabelFormat(QStringLiteral("%.3g"));
    y_axis = y;
  }
  y_axis->setTitleText(yTitle);
  chart->addAxis(x_axis, Qt::AlignBottom);
  chart->addAxis(y_axis, Qt::AlignLeft);

  for (const SweepSeries& s : model.series()) {
    auto* line = new QLineSeries;
    line->setName(s.name);
    QPen pen(seriesColour(s.variant), 2.2, s.warm ? Qt::SolidLine : Qt::DashLine);
    line->setPen(pen);
    line->setPointsVisible(true);
    line->setLightMarker(markerImage(s.variant));
    line->setMarkerSize(12);
    for (const QPointF& p : s.points) line->append(p);
    // Hover: the point's value and, for latency, the min–max of its repeats.
    const SweepAxis axis = model.axis();
    const SweepMetric metric = model.metric();
    connect(line, &QXYSeries::hovered, this, [s, axis, metric](const QPointF& at, bool state) {
      if (!state) return QToolTip::hideText();
      std::size_t nearest = 0;
      for (std::size_t i = 1; i < s.points.size(); ++i)
        if (std::abs(std::log(s.points[i].x() / at.x())) < std::abs(std::log(s.points[nearest].x() / at.x())))
          nearest = i;
      QToolTip::showText(QCursor::pos(), sweepPointToolTip(s, nearest, axis, metric));
    });
    chart->addSeries(line);
    line->attachAxis(x_axis);
    line->attachAxis(y_axis);
    std::vector<Whisker> spread;
    for (std::size_t i = 0; i < s.points.size() && i < s.low.size() && i < s.high.size(); ++i)
      spread.push_back({s.points[i].x(), s.low[i], s.high[i]});
    whiskers->setWhiskers(line, std::move(spread));
  }
  if (std::isfinite(xmin)) {
    x_axis->setRange(xmin / 1.4, xmax * 1.4);
    // The y range: rescaleY, over the visible series (applyVisibility).
  } else {
    chart->setTitle(chart->title() + tr(" — no data"));
  }
  // One legend for both charts (the list beside them): 20+ series do not fit a QChart legend.
  chart->legend()->hide();
}

namespace {
int exportLegendRow(const QListWidget& legend) {
  return std::max(legend.fontMetrics().height(), legend.iconSize().height()) + 4;
}
}  // namespace

// The legend of an export: the visible series, one swatch and name a row.
QSize ChartsView::exportLegendSize() const {
  int widest = 0, rows = 0;
  for (int i = 0; i < legend_->count(); ++i)
    if (legend_->item(i)->checkState() == Qt::Checked) {
      widest = std::max(widest, legend_->fontMetrics().horizontalAdvance(legend_->item(i)->text()));
      ++rows;
    }
  if (rows == 0) return {};
  return QSize(legend_->iconSize().width() + widest + 24, rows * exportLegendRow(*legend_) + 24);
}

QSize ChartsView::exportSize() const {
  const QSize legend = exportLegendSize();
  return QSize(latency_view_->width() + legend.width(),
               std::max(latency_view_->height() + floor_view_->height(), legend.height()));
}

void ChartsView::renderExport(QPainter& painter) {
  // As widgets (frame and all, as the screen shows them), not QGraphicsView's scene render.
  latency_view_->QWidget::render(&painter, QPoint(0, 0));
  floor_view_->QWidget::render(&painter, QPoint(0, latency_view_->height()));
  const QFontMetrics fm = legend_->fontMetrics();
  const QSize icon = legend_->iconSize();
  const int row = exportLegendRow(*legend_);
  int y = 12;
  painter.save();
  painter.setFont(legend_->font());
  painter.setPen(Qt::black);
  for (int i = 0; i < legend_->count(); ++i) {
    const QListWidgetItem* item = legend_->item(i);
    if (item->checkState() != Qt::Checked) continue;
    const int x = latency_view_->width() + 8;
    painter.drawPixmap(x, y + (row - icon.height()) / 2, item->icon().pixmap(icon));
    painter.drawText(QRect(x + icon.width() + 6, y, fm.horizontalAdvance(item->text()) + 4, row), Qt::AlignVCenter,
                     item->text());
    y += row;
  }
  painter.restore();
}

}  // namespace tilepath::ui
