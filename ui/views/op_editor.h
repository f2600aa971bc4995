#pragma once
// Operating-point editor: one control per field, validated with
// OperatingPoint::problems(). A bad field gets a red frame and the reason as its
// tooltip (and in the problem list); the K path and mode combos offer only the
// values valid for the chosen dtype control (valid_k_paths / valid_modes).

#include <map>

#include <QWidget>

#include "core/operating_point.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace tilepath::ui {

class OpEditor : public QWidget {
  Q_OBJECT
 public:
  explicit OpEditor(QWidget* parent = nullptr);

  OperatingPoint op() const;  // what the controls say (may be invalid)
  bool isValid() const { return problems_.empty(); }
  // Reason shown for a field ("" when fine). Field names as in ValidationError.
  QString fieldProblem(const QString& field) const;
  QString gpuModel() const;  // GPU model id for predictions
  void setGpuModels(const QStringList& ids, const QString& preferred = QStringLiteral("h200"));

 public slots:
  void setOp(const OperatingPoint& op);

 signals:
  void opChanged(const tilepath::OperatingPoint& op);  // any edit (valid or not)
  void gpuModelChanged(const QString& id);

 private:
  QSpinBox *batch_, *context_, *q_heads_, *kv_heads_, *head_dim_, *page_size_, *splits_;
  QComboBox *kv_, *k_path_, *mode_, *k_repr_, *rope_, *scale_, *cache_, *gpu_model_;
  QLineEdit* context_lengths_;
  QLabel* problem_list_;
  std::map<QString, QWidget*> field_widgets_;
  std::map<QString, QString> problems_;
  bool updating_ = false;

  void refillPathAndMode(KPath wantedPath, TransformMode wantedMode);
  void onEdited();
  void validate();
};

}  // namespace tilepath::ui
