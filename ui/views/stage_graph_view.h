#pragma once
// Stage graph view: the drawn graph of the current variant above the stage
// table (measured / predicted cost per tile, slack, limiting stage).

#include <QWidget>

#include "ui/variant_analysis.h"

class QGraphicsScene;
class QGraphicsView;
class QLabel;
class QTableView;

namespace tilepath::ui {

class StageTableModel;

class StageGraphView : public QWidget {
  Q_OBJECT
 public:
  explicit StageGraphView(QWidget* parent = nullptr);
  QGraphicsScene* scene() const { return scene_; }
  StageTableModel* stageModel() const { return model_; }
  // True while the drawn graph is not the edited operating point's (a field is invalid).
  bool isStale() const { return stale_; }
  QString staleText() const;

 public slots:
  void setAnalysis(const tilepath::ui::VariantAnalysis& analysis);
  // The edited operating point is invalid (reason): the graph still shows the last valid
  // one, so a banner says so until the next setAnalysis.
  void setStale(const QString& reason);

 protected:
  void resizeEvent(QResizeEvent* event) override;
  void showEvent(QShowEvent* event) override;

 private:
  QGraphicsScene* scene_;
  QGraphicsView* view_;
  StageTableModel* model_;
  QTableView* table_;
  QLabel* stale_banner_;
  bool stale_ = false;
  void fit();
};

}  // namespace tilepath::ui
