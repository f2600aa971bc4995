#include "ui/views/stage_graph_view.h"

#include <QGraphicsScene>
#include <QGraphicsView>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "ui/models/stage_table_model.h"
#include "ui/views/stage_graph_scene.h"

namespace tilepath::ui {

StageGraphView::StageGraphView(QWidget* parent) : QWidget(parent) {
  scene_ = new QGraphicsScene(this);
  view_ = new QGraphicsView(scene_);
  view_->setRenderHint(QPainter::Antialiasing);
  view_->setRenderHint(QPainter::TextAntialiasing);
  view_->setBackgroundBrush(QColor(252, 252, 250));
  model_ = new StageTableModel(this);
  table_ = new QTableView;
  table_->setModel(model_);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(view_);
  split->addWidget(table_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  stale_banner_ = new QLabel;
  stale_banner_->setObjectName(QStringLiteral("stale_banner"));
  stale_banner_->setWordWrap(true);
  stale_banner_->setStyleSheet(QStringLiteral("QLabel { background: #fde2c8; color: #7a2e00; padding: 4px; }"));
  stale_banner_->hide();
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(stale_banner_);
  layout->addWidget(split);
}

QString StageGraphView::staleText() const { return stale_ ? stale_banner_->text() : QString(); }

void StageGraphView::setStale(const QString& reason) {
  stale_ = true;
  stale_banner_->setText(
      tr("Stale: the operating point is invalid (%1). The graph shows the last valid one.").arg(reason));
  stale_banner_->show();
  // Greyed, so a glance tells the drawn numbers are not the edited point's.
  view_->setForegroundBrush(QColor(255, 255, 255, 140));
  table_->setEnabled(false);
}

void StageGraphView::setAnalysis(const VariantAnalysis& analysis) {
  stale_ = false;
  stale_banner_->hide();
  view_->setForegroundBrush(Qt::NoBrush);
  table_->setEnabled(true);
  buildStageGraphScene(*scene_, analysis);
  model_->setAnalysis(analysis);
  table_->resizeColumnsToContents();
  fit();
}

void StageGraphView::fit() {
  QRectF r = scene_->itemsBoundingRect().adjusted(-20, -20, 20, 20);
  scene_->setSceneRect(r);
  view_->fitInView(r, Qt::KeepAspectRatio);
}

void StageGraphView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  fit();
}

void StageGraphView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  fit();
}

}  // namespace tilepath::ui
