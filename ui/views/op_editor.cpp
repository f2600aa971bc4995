#include "ui/views/op_editor.h"

#include <algorithm>

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPalette>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include "core/op_fields.h"
#include "ui/qt_text.h"

namespace tilepath::ui {

namespace {

QWidget* makeControl(const OpField& f, const OperatingPoint& defaults, QWidget* parent) {
  switch (f.widget) {
    case EditorWidget::spin_box: {
      auto* s = new QSpinBox(parent);
      // Wider than valid on purpose: validation explains the limit.
      s->setRange(std::min(0, f.min), f.max * 16);
      s->setValue(f.get_int(defaults));
      if (!f.special_zero.empty()) s->setSpecialValueText(qs(f.special_zero));
      if (f.name == "context") s->setSingleStep(1024);
      return s;
    }
    case EditorWidget::combo_box:
      return new QComboBox(parent);
    case EditorWidget::line_edit: {
      auto* e = new QLineEdit(parent);
      e->setPlaceholderText(QObject::tr("optional, e.g. 512,4096,…"));
      return e;
    }
  }
  return nullptr;
}

// The control's value as the field's text.
QString controlText(const QWidget* w) {
  if (const auto* s = qobject_cast<const QSpinBox*>(w)) return QString::number(s->value());
  if (const auto* c = qobject_cast<const QComboBox*>(w)) return c->currentText();
  if (const auto* e = qobject_cast<const QLineEdit*>(w)) return e->text().trimmed();
  return {};
}

}  // namespace

OpEditor::OpEditor(QWidget* parent) : QWidget(parent) {
  const OperatingPoint defaults;
  auto* form = new QFormLayout;
  for (const OpField& f : op_fields()) {
    QWidget* w = makeControl(f, defaults, this);
    w->setObjectName(QStringLiteral("field_") + qs(f.name));
    w->setToolTip(QString());
    field_widgets_[qs(f.name)] = w;
    form->addRow(qs(f.label), w);
    if (auto* s = qobject_cast<QSpinBox*>(w)) connect(s, &QSpinBox::valueChanged, this, &OpEditor::onEdited);
    if (auto* c = qobject_cast<QComboBox*>(w)) connect(c, &QComboBox::currentIndexChanged, this, &OpEditor::onEdited);
    if (auto* e = qobject_cast<QLineEdit*>(w)) connect(e, &QLineEdit::editingFinished, this, &OpEditor::onEdited);
  }
  gpu_model_ = new QComboBox(this);
  form->addRow(tr("Predict for GPU"), gpu_model_);
  connect(gpu_model_, &QComboBox::currentIndexChanged, this, [this] {
    if (!updating_) emit gpuModelChanged(gpuModel());
  });

  problem_list_ = new QLabel(this);
  problem_list_->setWordWrap(true);
  problem_list_->setStyleSheet(QStringLiteral("color: #b41e1e;"));
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(problem_list_);
  layout->addStretch();

  showOp(defaults);
  validate();
}

OperatingPoint OpEditor::readOp(std::map<QString, QString>* parse_problems) const {
  OperatingPoint op;
  for (const OpField& f : op_fields()) {
    const QWidget* w = field_widgets_.at(qs(f.name));
    // A spin box's value is taken as it is: problems() names what is out of range.
    if (const auto* s = qobject_cast<const QSpinBox*>(w)) {
      f.set_int(op, s->value());
      continue;
    }
    const QString text = controlText(w);
    if (f.kind == FieldKind::integer_list && text.isEmpty()) continue;  // uniform batch
    try {
      f.parse_text(op, ss(text), std::string(f.name));
    } catch (const ValidationError& e) {
      if (parse_problems != nullptr) (*parse_problems)[qs(f.name)] = qs(e.what());
    }
  }
  return op;
}

OperatingPoint OpEditor::op() const { return readOp(nullptr); }

void OpEditor::showOp(const OperatingPoint& op) {
  const bool was_updating = updating_;
  updating_ = true;
  for (const OpField& f : op_fields()) {
    QWidget* w = field_widgets_.at(qs(f.name));
    const QSignalBlocker block(w);
    if (auto* s = qobject_cast<QSpinBox*>(w)) s->setValue(f.get_int(op));
    if (auto* e = qobject_cast<QLineEdit*>(w)) e->setText(qs(f.get_text(op)));
    if (auto* c = qobject_cast<QComboBox*>(w)) {
      // Only the values valid with the other fields; the item data is the enum value.
      const std::vector<std::string> all = f.all_names();
      c->clear();
      for (const std::string& name : f.valid_names(op)) {
        const auto index = std::find(all.begin(), all.end(), name) - all.begin();
        c->addItem(qs(name), static_cast<int>(index));
      }
      c->setCurrentIndex(std::max(0, c->findText(qs(f.get_text(op)))));
    }
  }
  updating_ = was_updating;
}

void OpEditor::setOp(const OperatingPoint& op) {
  showOp(op);
  onEdited();
}

QString OpEditor::fieldProblem(const QString& field) const {
  auto it = problems_.find(field);
  return it == problems_.end() ? QString() : it->second;
}

QString OpEditor::gpuModel() const { return gpu_model_->currentText(); }

void OpEditor::setGpuModels(const QStringList& ids, const QString& preferred) {
  updating_ = true;
  gpu_model_->clear();
  gpu_model_->addItems(ids);
  int i = gpu_model_->findText(preferred);
  if (i >= 0) gpu_model_->setCurrentIndex(i);
  updating_ = false;
}

void OpEditor::onEdited() {
  if (updating_) return;
  // A choice that the edit made invalid (a K path the new dtype control lacks) moves to
  // the control's default; the combos then offer what the other fields allow.
  OperatingPoint op = readOp(nullptr);
  const std::vector<std::string> paths = find_op_field("k_path")->valid_names(op);
  const bool path_ok = std::find(paths.begin(), paths.end(), std::string(to_string(op.k_path))) != paths.end();
  const std::vector<std::string> modes = find_op_field("mode")->valid_names(op);
  const bool mode_ok = std::find(modes.begin(), modes.end(), std::string(to_string(op.mode))) != modes.end();
  apply_path_defaults(op, path_ok, path_ok && mode_ok);
  showOp(op);
  validate();
  emit opChanged(this->op());
}

void OpEditor::validate() {
  std::map<QString, QString> parse_problems;
  const OperatingPoint op = readOp(&parse_problems);
  problems_ = parse_problems;
  QStringList lines;
  for (const auto& [field, text] : parse_problems) lines << text;
  if (parse_problems.empty()) {
    for (const ValidationError& e : op.problems()) {
      QString& slot = problems_[qs(e.field())];
      slot += (slot.isEmpty() ? QString() : QStringLiteral("\n")) + qs(e.what());
      lines << qs(e.what());
    }
  }
  for (auto& [name, w] : field_widgets_) {
    // context_lengths[3] marks the lengths field.
    auto it = std::find_if(problems_.begin(), problems_.end(), [&](const auto& p) {
      return p.first == name || p.first.startsWith(name + QLatin1Char('['));
    });
    const bool invalid = it != problems_.end();
    w->setProperty("invalid", invalid);
    w->setToolTip(invalid ? it->second : QString());
    if (qobject_cast<QSpinBox*>(w) != nullptr) {
      // A style sheet border would make the style draw the spin box itself, without its
      // arrows: a spin box is marked by a red background from its palette instead.
      QPalette palette;
      if (invalid) {
        palette = w->palette();
        palette.setColor(QPalette::Base, QColor(0xff, 0xd2, 0xd2));
        palette.setColor(QPalette::Text, QColor(0x8c, 0x00, 0x00));
      }
      w->setPalette(palette);
    } else {
      w->setStyleSheet(invalid ? QStringLiteral("border: 2px solid #d22; border-radius: 2px;") : QString());
    }
  }
  problem_list_->setText(lines.join(QLatin1Char('\n')));
}

}  // namespace tilepath::ui
