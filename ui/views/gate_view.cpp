#include "ui/views/gate_view.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <QValueAxis>

#include "ui/models/gate_model.h"
#include "ui/qt_text.h"
#include "ui/views/variant_palette.h"

namespace tilepath::ui {

namespace {

using analysis::GateMetric;

const QString kFailingName = QStringLiteral("fails the gate");

struct Range {
  double xmin = INFINITY, xmax = -INFINITY, ymax = -INFINITY;
  bool empty() const { return !std::isfinite(xmin); }
};

// The lines, a hollow red ring on every failing point and one dashed line per threshold,
// on the chart's two axes; returns the points' extent.
Range drawLines(QChart* chart, QAbstractAxis* x, QValueAxis* y, const std::vector<GateChartLine>& lines,
                GateMetric metric, bool log_x) {
  chart->removeAllSeries();
  Range r;
  QList<double> thresholds;
  for (const GateChartLine& line : lines) {
    for (const QPointF& p : line.points) {
      r.xmin = std::min(r.xmin, p.x());
      r.xmax = std::max(r.xmax, p.x());
      r.ymax = std::max(r.ymax, p.y());
    }
    for (double t : line.thresholds)
      if (!thresholds.contains(t)) thresholds << t;
  }
  if (r.empty()) return r;
  std::sort(thresholds.begin(), thresholds.end());
  double xlo = log_x ? r.xmin / 1.5 : r.xmin - 1;
  double xhi = log_x ? r.xmax * 1.5 : r.xmax + 1;
  x->setRange(xlo, xhi);
  // Decode steps are whole numbers: nice ticks rather than quarters of the range, and
  // the threshold lines span the whole axis.
  if (auto* steps = qobject_cast<QValueAxis*>(x)) {
    steps->applyNiceNumbers();
    xlo = steps->min();
    xhi = steps->max();
  }
  auto attach = [&](QAbstractSeries* s) {
    chart->addSeries(s);
    s->attachAxis(x);
    s->attachAxis(y);
  };
  auto* failing = new QScatterSeries;
  failing->setName(kFailingName);
  failing->setMarkerShape(QScatterSeries::MarkerShapeCircle);
  failing->setMarkerSize(14);
  failing->setBrush(Qt::NoBrush);
  failing->setPen(QPen(gateFailColour().darker(170), 2));
  for (const GateChartLine& line : lines) {
    auto* series = new QLineSeries;
    series->setName(line.name);
    series->setPen(QPen(gateDistributionColour(line.distribution), 2.2));
    series->setPointsVisible(true);
    series->append(line.points);
    attach(series);
    failing->append(line.failing);
  }
  for (double t : thresholds) {
    auto* series = new QLineSeries;
    series->setName(QStringLiteral("threshold %1").arg(gateThresholdText(metric, t)));
    QPen pen(QColor(0x30, 0x30, 0x30), 1.6, Qt::DashLine);
    series->setPen(pen);
    series->append(xlo, t);
    series->append(xhi, t);
    attach(series);
    r.ymax = std::max(r.ymax, t);
  }
  if (failing->count() > 0)
    attach(failing);
  else
    delete failing;
  y->setRange(0, r.ymax > 0 ? r.ymax * 1.12 : 1.0);
  y->applyNiceNumbers();
  return r;
}

}  // namespace

QColor gateDistributionColour(const QString& distribution) {
  static const struct {
    const char* name;
    QColor colour;
  } fixed[] = {
      {"gaussian", QColor(0x00, 0x67, 0xa5)},     {"heavy_tailed", QColor(0xf3, 0x84, 0x00)},
      {"qwen_bias", QColor(0xbe, 0x00, 0x32)},    {"projected", QColor(0x00, 0x88, 0x56)},
      {"partial_rope", QColor(0x87, 0x56, 0x92)},
  };
  for (const auto& f : fixed)
    if (distribution == QLatin1String(f.name)) return f.colour;
  return variantColour(distribution);
}

GateView::GateView(QWidget* parent) : QWidget(parent) {
  model_ = new GateModel(this);

  metric_ = new QComboBox;
  metric_->setObjectName(QStringLiteral("gateMetric"));
  for (GateMetric m : {GateMetric::rel_l2, GateMetric::kl, GateMetric::top8, GateMetric::top32, GateMetric::max_abs})
    metric_->addItem(gateMetricTitle(m), qs(to_string(m)));
  connect(metric_, &QComboBox::currentIndexChanged, this, &GateView::redraw);

  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("chart metric:")));
  controls->addWidget(metric_);
  controls->addStretch();
  controls->addWidget(new QLabel(
      tr("cells: the largest context's case (green pass, red fail); hover for every metric, click for the charts")));

  table_ = new QTableView;
  table_->setObjectName(QStringLiteral("gateTable"));
  table_->setModel(model_);
  table_->setWordWrap(true);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setSelectionBehavior(QAbstractItemView::SelectItems);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  table_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  connect(table_, &QTableView::clicked, this,
          [this](const QModelIndex& index) { selectCell(index.row(), index.column()); });

  caption_ = new QLabel;
  caption_->setObjectName(QStringLiteral("gateCaption"));
  caption_->setWordWrap(true);

  context_chart_ = new QChart;
  context_view_ = new QChartView(context_chart_);
  context_view_->setRenderHint(QPainter::Antialiasing);
  context_view_->setMinimumHeight(260);
  context_x_ = new QLogValueAxis;
  context_x_->setBase(2);
  context_x_->setLabelFormat(QStringLiteral("%g"));
  context_x_->setTitleText(tr("context S (tokens, log2)"));
  context_y_ = new QValueAxis;
  context_y_->setLabelFormat(QStringLiteral("%.3g"));
  context_chart_->addAxis(context_x_, Qt::AlignBottom);
  context_chart_->addAxis(context_y_, Qt::AlignLeft);
  context_chart_->legend()->setAlignment(Qt::AlignRight);

  step_chart_ = new QChart;
  step_view_ = new QChartView(step_chart_);
  step_view_->setRenderHint(QPainter::Antialiasing);
  step_view_->setMinimumHeight(260);
  step_x_ = new QValueAxis;
  step_x_->setLabelFormat(QStringLiteral("%g"));
  step_x_->setTitleText(tr("decode step (one token and query each)"));
  step_y_ = new QValueAxis;
  step_y_->setLabelFormat(QStringLiteral("%.3g"));
  step_chart_->addAxis(step_x_, Qt::AlignBottom);
  step_chart_->addAxis(step_y_, Qt::AlignLeft);
  step_chart_->legend()->setAlignment(Qt::AlignBottom);
  no_steps_ = new QLabel;
  no_steps_->setObjectName(QStringLiteral("gateNoSteps"));
  no_steps_->setWordWrap(true);
  no_steps_->setAlignment(Qt::AlignCenter);

  auto* charts = new QSplitter(Qt::Horizontal);
  charts->addWidget(context_view_);
  charts->addWidget(step_view_);
  charts->addWidget(no_steps_);
  charts->setStretchFactor(0, 3);
  charts->setStretchFactor(1, 2);
  charts->setStretchFactor(2, 1);

  auto* below = new QWidget;
  auto* below_layout = new QVBoxLayout(below);
  below_layout->setContentsMargins(0, 0, 0, 0);
  below_layout->addWidget(caption_);
  below_layout->addWidget(charts, 1);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(table_);
  split->addWidget(below);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);

  auto* content = new QWidget;
  auto* content_layout = new QVBoxLayout(content);
  content_layout->setContentsMargins(0, 0, 0, 0);
  content_layout->addLayout(controls);
  content_layout->addWidget(split, 1);

  empty_ = new QLabel(
      tr("<p><b>No numerical-gate results in this database.</b></p>"
         "<p><code>tilepath gate</code> stores them, one case per representation:</p>"
         "<pre>tilepath gate --distribution qwen_bias --all --db FILE\n"
         "tilepath gate --distribution gaussian --all --db FILE\n"
         "tilepath gate --distribution qwen_bias --all --context 16384 --db FILE   # error against context\n"
         "tilepath gate --distribution qwen_bias --all --steps 32 --db FILE        # error against decode step</pre>"
         "<p>then open FILE here (File → Open database…). docs/gate.md has the distributions and thresholds.</p>"));
  empty_->setObjectName(QStringLiteral("gateEmpty"));
  empty_->setTextFormat(Qt::RichText);
  empty_->setAlignment(Qt::AlignCenter);
  empty_->setWordWrap(true);

  pages_ = new QStackedWidget;
  pages_->addWidget(empty_);
  pages_->addWidget(content);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(pages_);
  setCases({});
}

GateMetric GateView::metric() const {
  return analysis::parse_gate_metric(ss(metric_->currentData().toString())).value_or(GateMetric::rel_l2);
}

bool GateView::showsEmptyMessage() const { return pages_->currentWidget() == empty_; }

QString GateView::caption() const { return caption_->text(); }

QString GateView::selectedDistribution() const { return model_->distributionAt(column_); }

void GateView::setCases(const std::vector<CaseSummary>& cases, const analysis::GateJsonReader& read_gate_json) {
  setTable(analysis::build_gate_table(cases), read_gate_json);
}

void GateView::setTable(analysis::GateTable table, const analysis::GateJsonReader& read_gate_json) {
  // The selection follows its representation and distribution into the new table.
  const analysis::GateRow* before = model_->rowAt(row_);
  const QString label = before ? qs(before->label) : QString();
  const QString distribution = selectedDistribution();
  analysis::add_step_series(table, read_gate_json);
  model_->setTable(std::move(table));
  const analysis::GateTable& t = model_->table();
  pages_->setCurrentWidget(t.empty() ? static_cast<QWidget*>(empty_) : pages_->widget(1));
  table_->resizeRowsToContents();

  int row = -1, column = -1;
  if (!label.isEmpty())
    for (int r = 0; r < model_->rowCount(); ++r)
      if (qs(model_->rowAt(r)->label) == label) row = r;
  if (row >= 0) {
    column = 0;
    for (int c = 0; c < model_->columnCount(); ++c)
      if (model_->distributionAt(c) == distribution) column = c;
  }
  if (row < 0 && !t.empty()) {
    // Start where there is most to see: a failing cell of a representation with a
    // decode-step run of that distribution, else a representation with a decode-step run
    // (both charts drawn), else the first cell.
    auto steps_of = [&](int r, int c) {
      for (const analysis::GateStepSeries& s : model_->rowAt(r)->step_series)
        if (qs(s.result.distribution) == model_->distributionAt(c)) return true;
      return false;
    };
    auto fails = [&](int r, int c) {
      const analysis::GateCell* cell = model_->cellAt(r, c);
      return cell != nullptr && !cell->shown.passed;
    };
    auto first = [&](auto&& wanted) {
      for (int r = 0; r < model_->rowCount(); ++r)
        for (int c = 0; c < model_->columnCount(); ++c)
          if (wanted(r, c)) return std::pair(r, c);
      return std::pair(-1, -1);
    };
    std::tie(row, column) = first([&](int r, int c) { return fails(r, c) && steps_of(r, c); });
    if (row < 0) std::tie(row, column) = first(steps_of);
    if (row < 0) std::tie(row, column) = first([&](int r, int c) { return model_->cellAt(r, c) != nullptr; });
  }
  selectCell(row, column);
}

void GateView::selectCell(int row, int column) {
  if (model_->rowAt(row) == nullptr) row = column = -1;
  row_ = row;
  column_ = column;
  if (row_ >= 0) table_->setCurrentIndex(model_->index(row_, column_));
  redraw();
}

void GateView::redraw() {
  const analysis::GateRow* row = model_->rowAt(row_);
  QStringList text;
  if (row != nullptr) {
    const analysis::GateCell* cell = model_->cellAt(row_, column_);
    if (cell != nullptr)
      text << tr("Selected: %1 on %2 (case %3, S=%4).")
                  .arg(qs(row->label), selectedDistribution())
                  .arg(cell->shown.case_id)
                  .arg(cell->shown.context());
    else
      text << tr("Selected: %1 (no %2 result).").arg(qs(row->label), selectedDistribution());
  }
  for (const std::string& p : model_->table().problems) text << tr("Not charted: %1.").arg(qs(p));
  caption_->setText(text.join(QLatin1Char(' ')));
  rebuildContextChart();
  rebuildStepChart();
}

void GateView::rebuildContextChart() {
  const analysis::GateRow* row = model_->rowAt(row_);
  const GateMetric m = metric();
  const std::vector<GateChartLine> lines = row ? gateContextLines(*row, m) : std::vector<GateChartLine>{};
  context_y_->setTitleText(tr("%1, worst row").arg(gateMetricTitle(m)));
  const Range r = drawLines(context_chart_, context_x_, context_y_, lines, m, /*log_x=*/true);
  context_chart_->setTitle(row ? tr("%1 against context: %2").arg(gateMetricTitle(m), qs(row->label))
                               : tr("%1 against context").arg(gateMetricTitle(m)));
  if (r.empty()) context_chart_->setTitle(context_chart_->title() + tr(" — no case stores it"));
}

void GateView::rebuildStepChart() {
  const analysis::GateRow* row = model_->rowAt(row_);
  const GateMetric m = metric();
  const std::vector<GateChartLine> lines = row ? gateStepLines(*row, m) : std::vector<GateChartLine>{};
  step_y_->setTitleText(tr("%1, worst row of the step").arg(gateMetricTitle(m)));
  const Range r = drawLines(step_chart_, step_x_, step_y_, lines, m, /*log_x=*/false);
  step_chart_->setTitle(tr("%1 against decode step").arg(gateMetricTitle(m)));
  const bool has_steps = !r.empty();
  step_view_->setVisible(has_steps);
  no_steps_->setVisible(!has_steps && row != nullptr);
  no_steps_->setText(
      tr("No decode-step run of this representation.\n\ntilepath gate … --steps 32 --db FILE\nadds the error "
         "against decode step (scales from the prefix; --scales per_step recomputes them)."));
}

}  // namespace tilepath::ui
