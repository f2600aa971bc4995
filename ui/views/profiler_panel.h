#pragma once
// Profiler panel of one case: what Nsight Compute measured for it (the ncu_* measurements
// `tilepath attach --ncu-csv` / `--ncu` and `run --profile` store: DRAM bytes, L2 hit rate,
// achieved occupancy, duration, stall reasons largest first, bank conflicts, instructions
// per pipe) and the files kept with it, each of which opens as text.

#include <QWidget>

#include "core/store/run_store.h"

class QLabel;
class QListWidget;
class QPushButton;
class QTableWidget;

namespace tilepath::ui {

class ProfilerPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ProfilerPanel(QWidget* parent = nullptr);
  // The case with its artifacts (RunStore::load_case(id, true)); an empty record clears.
  void setCase(const CaseRecord& rec);
  QTableWidget* metricsTable() const { return metrics_; }
  QListWidget* artifactList() const { return artifacts_; }
  // The artifact's bytes as text (a binary artifact: a line saying so); "" for no such artifact.
  QString artifactText(const QString& name) const;

 private:
  void openSelectedArtifact();
  CaseRecord rec_;
  QLabel* title_;
  QTableWidget* metrics_;
  QListWidget* artifacts_;
  QPushButton* open_;
};

}  // namespace tilepath::ui
