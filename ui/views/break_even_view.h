#pragma once
// Break-even view: per stored shape, the K8/V8 − K16/V8 decomposition and V
// hidden fraction (table), with the waterfall of the selected shape.

#include <vector>

#include <QWidget>

#include "core/store/run_store.h"

class QSortFilterProxyModel;
class QTableView;

namespace tilepath::ui {

class BreakEvenModel;
class WaterfallWidget;

class BreakEvenView : public QWidget {
  Q_OBJECT
 public:
  explicit BreakEvenView(QWidget* parent = nullptr);
  BreakEvenModel* model() const { return model_; }

 public slots:
  void setCases(const std::vector<tilepath::CaseSummary>& cases);

 private:
  BreakEvenModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  WaterfallWidget* waterfall_;
  void showSelected();
};

}  // namespace tilepath::ui
