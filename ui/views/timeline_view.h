#pragma once
// Timeline view: the Gantt of simulate_pipeline() for the current variant, with
// a tile-count control.

#include <optional>

#include <QWidget>

#include "ui/variant_analysis.h"

class QGraphicsScene;
class QGraphicsView;
class QSpinBox;

namespace tilepath::ui {

class TimelineView : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineView(QWidget* parent = nullptr);
  QGraphicsScene* scene() const { return scene_; }
  int tiles() const;

 public slots:
  void setAnalysis(const tilepath::ui::VariantAnalysis& analysis);

 signals:
  void tilesChanged(int tiles);  // the owner recomputes the analysis with this many tiles

 protected:
  void resizeEvent(QResizeEvent* event) override;
  void showEvent(QShowEvent* event) override;

 private:
  QGraphicsScene* scene_;
  QGraphicsView* view_;
  QSpinBox* tiles_;
  std::optional<VariantAnalysis> analysis_;
  void redraw();
};

}  // namespace tilepath::ui
