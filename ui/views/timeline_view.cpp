#include "ui/views/timeline_view.h"

#include <algorithm>

#include <QGraphicsScene>
#include <QGraphicsView>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>

#include "ui/views/timeline_scene.h"

namespace tilepath::ui {

TimelineView::TimelineView(QWidget* parent) : QWidget(parent) {
  scene_ = new QGraphicsScene(this);
  view_ = new QGraphicsView(scene_);
  view_->setRenderHint(QPainter::Antialiasing);
  view_->setBackgroundBrush(Qt::white);
  view_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  tiles_ = new QSpinBox;
  tiles_->setRange(2, 64);
  tiles_->setValue(8);
  connect(tiles_, &QSpinBox::valueChanged, this, &TimelineView::tilesChanged);
  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Tiles unrolled:")));
  controls->addWidget(tiles_);
  controls->addWidget(
      new QLabel(tr("Hover a block for stage, tile, start and end. Solid blue lines: predicted II; "
                    "dashed red: measured II. Thick outline: critical path.")));
  controls->addStretch();
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(controls);
  layout->addWidget(view_, 1);
}

int TimelineView::tiles() const { return tiles_->value(); }

void TimelineView::setAnalysis(const VariantAnalysis& analysis) {
  analysis_ = analysis;
  redraw();
}

// Drawn at the viewport's size (1:1, top-left) so text keeps its size and the lanes fill
// the height; only a viewport smaller than the drawing's minimum scales it down.
void TimelineView::redraw() {
  if (!analysis_) return;
  constexpr double kMargin = 10;  // around the drawing, inside the viewport
  const QSizeF area = QSizeF(view_->viewport()->size()) - QSizeF(2 * kMargin + 2, 2 * kMargin + 2);
  buildTimelineScene(*scene_, *analysis_, area);
  QRectF r = scene_->itemsBoundingRect().adjusted(-kMargin, -kMargin, kMargin, kMargin);
  scene_->setSceneRect(r);
  view_->resetTransform();
  if (r.width() > view_->viewport()->width() || r.height() > view_->viewport()->height())
    view_->fitInView(r, Qt::KeepAspectRatio);
}

void TimelineView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  redraw();
}

void TimelineView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  redraw();
}

}  // namespace tilepath::ui
