#include "ui/views/break_even_view.h"

#include <algorithm>

#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QScrollBar>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "ui/models/break_even_model.h"
#include "ui/views/compact_sort_header.h"
#include "ui/views/sort_arrow_style.h"
#include "ui/views/waterfall_widget.h"

namespace tilepath::ui {

BreakEvenView::BreakEvenView(QWidget* parent) : QWidget(parent) {
  model_ = new BreakEvenModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(BreakEvenModel::SortRole);
  table_ = new QTableView;
  table_->setHorizontalHeader(new CompactSortHeader(table_));
  table_->setModel(proxy_);
  useOrderPointingSortArrows(table_->horizontalHeader());
  table_->setSortingEnabled(true);
  // A real initial order, so the header's indicator says what the rows show.
  table_->sortByColumn(BreakEvenModel::Shape, Qt::AscendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->hide();
  // Compact rows: a sweep's shapes fit above the waterfall without scrolling.
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  // The numbers keep their width; the variant column takes what is left (elided when
  // narrow), so the table fits its width without scrolling sideways.
  table_->horizontalHeader()->setStretchLastSection(false);
  table_->horizontalHeader()->setSectionResizeMode(BreakEvenModel::K8V8Variant, QHeaderView::Stretch);
  table_->setTextElideMode(Qt::ElideMiddle);
  waterfall_ = new WaterfallWidget;
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this] { showSelected(); });

  auto* note =
      new QLabel(tr("T(K8/V8) − T(K16/V8) ≈ unhidden K8 prep + K8 pipeline/occupancy penalty − extra K16 HBM "
                    "time, per tile, from each variant's stored stage costs and measured tile interval. "
                    "K8/V8 is the fastest stored K8/V8 variant at the shape."));
  note->setWordWrap(true);
  split_ = new QSplitter(Qt::Vertical);
  auto* split = split_;
  split->addWidget(table_);
  split->addWidget(waterfall_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 2);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(note);
  layout->addWidget(split, 1);
}

void BreakEvenView::setCases(const std::vector<CaseSummary>& cases, const analysis::StageCostReader& read_stage_costs) {
  model_->setCases(cases, read_stage_costs);
  table_->resizeColumnsToContents();
  fitTableToRows();
  // Start on the largest HBM-cold shape that has a decomposition: where the K byte matters most.
  int pick = -1;
  double best = -1;
  for (int r = 0; r < proxy_->rowCount(); ++r) {
    const BreakEvenRow& row = model_->rowAt(proxy_->mapToSource(proxy_->index(r, 0)).row());
    if (!row.decomposition) continue;
    double size = double(row.op.batch) * row.op.context * (row.op.cache == CacheState::hbm_cold ? 2 : 1);
    if (size > best) best = size, pick = r;
  }
  if (const int followed = followedRow(); followed >= 0) pick = followed;
  if (pick < 0 && proxy_->rowCount() > 0) pick = 0;
  if (pick >= 0)
    table_->selectionModel()->setCurrentIndex(proxy_->index(pick, 0),
                                              QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  showSelected();
}

void BreakEvenView::fitTableToRows() {
  const int rows = proxy_->rowCount();
  int needed = table_->horizontalHeader()->height() + 2 * table_->frameWidth() +
               table_->horizontalScrollBar()->sizeHint().height() + 4;
  for (int r = 0; r < rows; ++r) needed += table_->rowHeight(r);
  const int total = split_->height() > 0 ? split_->height() : sizeHint().height();
  // The waterfall keeps its minimum; past that the table scrolls.
  const int table_height = std::min(needed, std::max(0, total - waterfall_->minimumHeight()));
  split_->setSizes({table_height, std::max(0, total - table_height)});
}

void BreakEvenView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  fitTableToRows();
}

int BreakEvenView::followedRow() const {
  if (!followed_) return -1;
  const OperatingPoint& op = *followed_;
  for (int r = 0; r < proxy_->rowCount(); ++r) {
    const OperatingPoint& shape = model_->rowAt(proxy_->mapToSource(proxy_->index(r, 0)).row()).op;
    if (shape.batch == op.batch && shape.context == op.context && shape.q_heads == op.q_heads &&
        shape.kv_heads == op.kv_heads && shape.head_dim == op.head_dim && shape.cache == op.cache)
      return r;
  }
  return -1;
}

void BreakEvenView::followOperatingPoint(const OperatingPoint& op) {
  followed_ = op;
  if (const int r = followedRow(); r >= 0)
    table_->selectionModel()->setCurrentIndex(proxy_->index(r, 0),
                                              QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
}

std::optional<BreakEvenRow> BreakEvenView::selectedRow() const {
  const QModelIndex current = table_->selectionModel()->currentIndex();
  if (!current.isValid()) return std::nullopt;
  return model_->rowAt(proxy_->mapToSource(current).row());
}

void BreakEvenView::showSelected() {
  QModelIndex current = table_->selectionModel()->currentIndex();
  if (!current.isValid()) {
    waterfall_->setRow(std::nullopt);
    return;
  }
  waterfall_->setRow(model_->rowAt(proxy_->mapToSource(current).row()));
}

}  // namespace tilepath::ui
