#pragma once
// The stages of one variant (what the stage-graph view draws) as a table:
// agent, measured and predicted cost per tile, slack to II, limiting flag.

#include <QAbstractTableModel>

#include "ui/variant_analysis.h"

namespace tilepath::ui {

class StageTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { StageName, AgentName, MeasuredUs, PredictedUs, SlackUs, Limiting, ColumnCount };
  static constexpr int StageRole = Qt::UserRole;  // int(Stage)

  explicit StageTableModel(QObject* parent = nullptr);
  void setAnalysis(const VariantAnalysis& analysis);
  Stage stageAt(int row) const { return stages_.at(row); }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<Stage> stages_;
  std::vector<Agent> agents_;
  StageCosts measured_, predicted_, slack_;
  Stage limiting_ = Stage::k_load;
  bool has_schedule_ = false;
};

}  // namespace tilepath::ui
