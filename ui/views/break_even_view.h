#pragma once
// Break-even view: per stored shape, the K8/V8 − K16/V8 decomposition and V
// hidden fraction (table), with the waterfall of the selected shape.

#include <optional>
#include <vector>

#include <QWidget>

#include "core/store/run_store.h"
#include "ui/models/break_even_model.h"

class QSortFilterProxyModel;
class QSplitter;
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
  // read_stage_costs: for cases listed without their stage costs (analysis::break_even_table).
  void setCases(const std::vector<tilepath::CaseSummary>& cases,
                const tilepath::analysis::StageCostReader& read_stage_costs = {});
  // The operating-point editor's point: the row of its shape (batch, context, heads, head
  // dim, cache state) is selected whenever the table has one.
  void followOperatingPoint(const tilepath::OperatingPoint& op);
  // The shape whose waterfall is drawn; nullopt when none is selected.
  std::optional<BreakEvenRow> selectedRow() const;
  QTableView* table() const { return table_; }

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  BreakEvenModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  WaterfallWidget* waterfall_;
  QSplitter* split_;
  std::optional<OperatingPoint> followed_;
  void showSelected();
  int followedRow() const;  // proxy row of followed_'s shape, -1 if none
  void fitTableToRows();    // the splitter gives the table every row, the waterfall the rest
};

}  // namespace tilepath::ui
