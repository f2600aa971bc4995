#pragma once
// Stage graph view: the drawn graph of the current variant above the stage
// table (measured / predicted cost per tile, slack, limiting stage).

#include <QWidget>

#include "ui/variant_analysis.h"

class QGraphicsScene;
class QGraphicsView;
class QTableView;

namespace tilepath::ui {

class StageTableModel;

class StageGraphView : public QWidget {
  Q_OBJECT
 public:
  explicit StageGraphView(QWidget* parent = nullptr);
  QGraphicsScene* scene() const { return scene_; }
  StageTableModel* stageModel() const { return model_; }

 public slots:
  void setAnalysis(const tilepath::ui::VariantAnalysis& analysis);

 protected:
  void resizeEvent(QResizeEvent* event) override;
  void showEvent(QShowEvent* event) override;

 private:
  QGraphicsScene* scene_;
  QGraphicsView* view_;
  StageTableModel* model_;
  QTableView* table_;
  void fit();
};

}  // namespace tilepath::ui
