#pragma once
// Dispatch view: which variant to run at which batch and context, from the stored cases
// through core's dispatch table (core/analysis/dispatch.h, as `tilepath dispatch`). A map
// of one group's winners (batch × context, margins, crossovers, hover for the cases),
// chosen by cache state (or by backend/device/shape/cache when the table has several), a
// gate choice (no gate, or the stored quality rows of one distribution excluding the
// variants that fail it), the table's gate text and leave-one-out regret as a caption,
// and under the map the winner's speed-up over the fastest K16/V16 variant per batch.

#include <memory>
#include <vector>

#include <QWidget>

#include "core/store/run_store.h"

class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QLogValueAxis;
class QValueAxis;

namespace tilepath::ui {

class DispatchMapWidget;
class DispatchModel;

class DispatchView : public QWidget {
  Q_OBJECT
 public:
  explicit DispatchView(QWidget* parent = nullptr);
  DispatchModel* model() const { return model_; }
  DispatchMapWidget* map() const { return map_; }
  QChart* speedupChart() const { return chart_; }
  QComboBox* groupCombo() const { return group_; }
  QComboBox* gateCombo() const { return gate_; }  // item data: the distribution, "" = no gate
  QString caption() const;

 public slots:
  void setCases(const std::vector<tilepath::CaseSummary>& cases);
  // Shared with the session: the list is not copied.
  void setSharedCases(std::shared_ptr<const std::vector<tilepath::CaseSummary>> cases);

 private:
  DispatchModel* model_;
  DispatchMapWidget* map_;
  QChart* chart_;
  QChartView* chart_view_;
  QLogValueAxis* x_axis_;
  QValueAxis* y_axis_;
  QComboBox *group_, *gate_;
  QLabel *group_label_, *caption_;

  void refillGates();
  void showTable();  // the model's table or group changed
  void rebuildChart();
};

}  // namespace tilepath::ui
