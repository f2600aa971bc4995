#pragma once
// Profiler panel of one case: what Nsight Compute measured for it (the ncu_* measurements
// `tilepath attach --ncu-csv` / `--ncu` and `run --profile` store: DRAM bytes, L2 hit rate,
// achieved occupancy, duration, stall reasons largest first, bank conflicts, instructions
// per pipe) and the files kept with it (ncu reports, samples.json, kernel.json): a text one
// opens read-only in a viewer, any one saves to a file.

#include <QWidget>

#include "core/store/run_store.h"

class QDialog;
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
  // Is the artifact text (text/*, JSON, CSV, or bytes without NUL)? false for no such artifact.
  bool isTextArtifact(const QString& name) const;
  // A read-only viewer of a text artifact (deleted on close); nullptr for a binary or unknown one.
  QDialog* viewArtifact(const QString& name);
  // Writes the artifact's bytes to path as stored; false with *error set when it cannot.
  bool saveArtifact(const QString& name, const QString& path, QString* error = nullptr) const;
  QPushButton* viewButton() const { return view_; }
  QPushButton* saveButton() const { return save_; }

 private:
  const Artifact* artifact(const QString& name) const;
  QString selectedArtifactName() const;
  void viewSelectedArtifact();
  void saveSelectedArtifact();
  CaseRecord rec_;
  QLabel* title_;
  QTableWidget* metrics_;
  QListWidget* artifacts_;
  QPushButton* view_;
  QPushButton* save_;
};

}  // namespace tilepath::ui
