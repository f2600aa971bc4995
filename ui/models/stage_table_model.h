#pragma once
// The stages of one variant (what the stage-graph view draws) as a table:
// agent, measured cost per tile and where it came from (core's preference rule; a
// stage without a measurement reads "unknown"), predicted cost, slack to II, limiting flag.

#include <QAbstractTableModel>

#include "ui/variant_analysis.h"

namespace tilepath::ui {

class StageTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { StageName, AgentName, MeasuredUs, CostSource, PredictedUs, SlackUs, Limiting, ColumnCount };
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
  analysis::ChosenStageCosts measured_;
  StageCosts predicted_, slack_;
  bool has_case_ = false;
  Stage limiting_ = Stage::k_load;
  bool has_schedule_ = false;
};

}  // namespace tilepath::ui
