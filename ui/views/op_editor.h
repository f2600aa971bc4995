#pragma once
// Operating-point editor: one control per field of the field table (core/op_fields.h):
// a spin box per integer, a combo per choice (offering only the values valid given
// the other fields, e.g. the K paths of the dtype control), a line edit for the
// ragged lengths. Validated with OperatingPoint::problems(): a bad field gets a red
// frame and the reason as its tooltip (and in the problem list).

#include <map>

#include <QWidget>

#include "core/operating_point.h"

class QComboBox;
class QLabel;

namespace tilepath {
struct OpField;
}

namespace tilepath::ui {

class OpEditor : public QWidget {
  Q_OBJECT
 public:
  explicit OpEditor(QWidget* parent = nullptr);

  // What the controls say (may be invalid; ragged lengths that do not parse are left
  // out, and isValid() is false).
  OperatingPoint op() const;
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
  std::map<QString, QWidget*> field_widgets_;  // field name -> its control
  QComboBox* gpu_model_;
  QLabel* problem_list_;
  std::map<QString, QString> problems_;
  bool updating_ = false;

  // The controls' operating point; a field whose text does not parse is left at its
  // default and its reason added to *parse_problems.
  OperatingPoint readOp(std::map<QString, QString>* parse_problems) const;
  // Shows op in the controls (choice combos refilled with the values valid for op).
  void showOp(const OperatingPoint& op);
  void onEdited();
  void validate();
};

}  // namespace tilepath::ui
