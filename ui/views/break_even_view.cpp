#include "ui/views/break_even_view.h"

#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "ui/models/break_even_model.h"
#include "ui/views/waterfall_widget.h"

namespace tilepath::ui {

BreakEvenView::BreakEvenView(QWidget* parent) : QWidget(parent) {
  model_ = new BreakEvenModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(BreakEvenModel::SortRole);
  table_ = new QTableView;
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  waterfall_ = new WaterfallWidget;
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this] { showSelected(); });

  auto* note =
      new QLabel(tr("T(K8/V8) − T(K16/V8) ≈ unhidden K8 prep + K8 pipeline/occupancy penalty − extra K16 HBM "
                    "time, per tile, from each variant's stored stage costs and measured tile interval. "
                    "K8/V8 is the fastest stored K8/V8 variant at the shape."));
  note->setWordWrap(true);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(table_);
  split->addWidget(waterfall_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 2);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(note);
  layout->addWidget(split, 1);
}

void BreakEvenView::setCases(const std::vector<CaseSummary>& cases) {
  model_->setCases(cases);
  table_->resizeColumnsToContents();
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
