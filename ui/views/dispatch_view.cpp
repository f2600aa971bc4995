#include "ui/views/dispatch_view.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QSignalBlocker>
#include <QSplitter>
#include <QVBoxLayout>
#include <QValueAxis>

#include "ui/models/dispatch_model.h"
#include "ui/qt_text.h"
#include "ui/views/dispatch_map_widget.h"

namespace tilepath::ui {

namespace {

// Batch is ordered, so its lines take an ordered ramp (viridis stops), small batches dark.
QColor batchColour(int index, int count) {
  static const QColor stops[] = {QColor(0x44, 0x01, 0x54), QColor(0x3b, 0x52, 0x8b), QColor(0x21, 0x91, 0x8c),
                                 QColor(0x5e, 0xc9, 0x62), QColor(0xc8, 0xb8, 0x00)};
  constexpr int n = static_cast<int>(std::size(stops));
  const double t = count <= 1 ? 0 : double(index) / (count - 1) * (n - 1);
  const int i = std::min(n - 2, static_cast<int>(t));
  const double f = t - i;
  auto mix = [f](int a, int b) { return static_cast<int>(std::lround(a + f * (b - a))); };
  return QColor(mix(stops[i].red(), stops[i + 1].red()), mix(stops[i].green(), stops[i + 1].green()),
                mix(stops[i].blue(), stops[i + 1].blue()));
}

QString regretText(const analysis::RegretSummary& r) {
  if (r.points.empty()) return QStringLiteral("no point with two admitted variants to dispatch from the others");
  return QStringLiteral("median %1, p90 %2, max %3 over %4 points")
      .arg(percentText(r.median), percentText(r.p90), percentText(r.max))
      .arg(r.points.size());
}

}  // namespace

DispatchView::DispatchView(QWidget* parent) : QWidget(parent) {
  model_ = new DispatchModel(this);
  map_ = new DispatchMapWidget;
  chart_ = new QChart;
  chart_view_ = new QChartView(chart_);
  chart_view_->setRenderHint(QPainter::Antialiasing);
  chart_view_->setMinimumHeight(260);  // axis labels and title need this much to be whole
  // One pair of axes for every group: only the series and the ranges change.
  x_axis_ = new QLogValueAxis;
  x_axis_->setBase(2);
  x_axis_->setLabelFormat(QStringLiteral("%g"));
  x_axis_->setTitleText(tr("context S (tokens, log2)"));
  y_axis_ = new QValueAxis;
  y_axis_->setLabelFormat(QStringLiteral("%.2f"));
  y_axis_->setTitleText(tr("speed-up (×)"));
  chart_->addAxis(x_axis_, Qt::AlignBottom);
  chart_->addAxis(y_axis_, Qt::AlignLeft);
  chart_->legend()->setAlignment(Qt::AlignRight);

  group_ = new QComboBox;
  group_->setObjectName(QStringLiteral("dispatchGroup"));
  group_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  group_label_ = new QLabel(tr("cache:"));
  gate_ = new QComboBox;
  gate_->setObjectName(QStringLiteral("dispatchGate"));
  gate_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  gate_->setToolTip(
      tr("Stored quality results of one distribution exclude the variants that fail it there; the speed runs' own "
         "kernel check (random inputs) is never a gate"));
  connect(group_, &QComboBox::currentIndexChanged, this, [this](int index) { model_->setGroupIndex(index); });
  connect(gate_, &QComboBox::currentIndexChanged, this,
          [this] { model_->setGateDistribution(gate_->currentData().toString()); });
  connect(model_, &DispatchModel::tableChanged, this, &DispatchView::showTable);

  auto* controls = new QHBoxLayout;
  controls->addWidget(group_label_);
  controls->addWidget(group_);
  controls->addWidget(new QLabel(tr("gate:")));
  controls->addWidget(gate_);
  controls->addStretch();
  controls->addWidget(new QLabel(tr("hover a cell or a crossover for the cases it rests on")));
  caption_ = new QLabel;
  caption_->setObjectName(QStringLiteral("dispatchCaption"));
  caption_->setWordWrap(true);

  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(map_);
  split->addWidget(chart_view_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(controls);
  layout->addWidget(caption_);
  layout->addWidget(split, 1);
  refillGates();
  showTable();
}

QString DispatchView::caption() const { return caption_->text(); }

void DispatchView::setCases(const std::vector<CaseSummary>& cases) {
  setSharedCases(std::make_shared<const std::vector<CaseSummary>>(cases));
}

void DispatchView::setSharedCases(std::shared_ptr<const std::vector<CaseSummary>> cases) {
  model_->setSharedCases(std::move(cases));  // emits tableChanged → showTable
  refillGates();
}

void DispatchView::refillGates() {
  const QString current = model_->gateDistribution();
  {
    const QSignalBlocker blocker(gate_);
    gate_->clear();
    gate_->addItem(tr("no gate"), QString());
    for (const QString& d : model_->gates()) gate_->addItem(d, d);
    gate_->setCurrentIndex(std::max(0, gate_->findData(current)));
  }
  // A gate no longer stored in the database is no longer applied.
  model_->setGateDistribution(gate_->currentData().toString());
}

void DispatchView::showTable() {
  const analysis::DispatchTable& table = model_->table();
  group_label_->setText(model_->groupsDifferOnlyInCache() ? tr("cache:") : tr("group:"));
  {
    const QSignalBlocker blocker(group_);
    group_->clear();
    group_->addItems(model_->groupLabels());
    group_->setCurrentIndex(model_->groupIndex());
  }
  const analysis::DispatchGroup* g = model_->group();
  map_->setGroup(g ? std::optional<analysis::DispatchGroup>(*g) : std::nullopt);
  QString text = qs(table.gate) + QStringLiteral(". ");
  if (g == nullptr) {
    text += tr("No ok case with a uniform batch and a latency to dispatch between.");
  } else {
    text += tr("Leave-one-out regret (each point dispatched from the others of its group): this group %1")
                .arg(regretText(model_->groupRegret()));
    if (table.groups.size() > 1)
      text += tr("; all %1 groups %2").arg(table.groups.size()).arg(regretText(table.regret));
    text += QStringLiteral(".");
  }
  caption_->setText(text);
  rebuildChart();
}

void DispatchView::rebuildChart() {
  chart_->removeAllSeries();
  const analysis::DispatchGroup* g = model_->group();
  const std::vector<DispatchSpeedup> lines = g ? speedupOverK16V16(*g) : std::vector<DispatchSpeedup>{};
  chart_->setTitle(tr("winner's speed-up over the fastest K16/V16 variant (t K16/V16 ÷ t winner), per batch"));
  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    auto* series = new QLineSeries;
    series->setName(tr("B=%1").arg(lines[i].batch));
    series->setPen(QPen(batchColour(static_cast<int>(i), static_cast<int>(lines.size())), 2.2));
    series->setPointsVisible(true);
    for (const QPointF& p : lines[i].points) {
      series->append(p);
      xmin = std::min(xmin, p.x());
      xmax = std::max(xmax, p.x());
      ymin = std::min(ymin, p.y());
      ymax = std::max(ymax, p.y());
    }
    chart_->addSeries(series);
    series->attachAxis(x_axis_);
    series->attachAxis(y_axis_);
  }
  if (std::isfinite(xmin)) {
    x_axis_->setRange(xmin / 1.4, xmax * 1.4);
    // From 1× (as fast as K16/V16) when every winner is faster, so the gain reads against it.
    y_axis_->setRange(ymin >= 1 ? 1.0 : ymin * 0.9, ymax * 1.05);
    y_axis_->applyNiceNumbers();
  } else {
    chart_->setTitle(chart_->title() + tr(" — no point with both a K16/V16 case and a winner"));
  }
}

}  // namespace tilepath::ui
