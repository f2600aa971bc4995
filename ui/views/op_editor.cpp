#include "ui/views/op_editor.h"

#include <algorithm>

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include "ui/qt_text.h"

namespace tilepath::ui {

namespace {

QSpinBox* spin(int lo, int hi, int value, const QString& special = {}) {
  auto* s = new QSpinBox;
  s->setRange(lo, hi);  // wider than valid on purpose: validation explains the limit
  s->setValue(value);
  if (!special.isEmpty()) s->setSpecialValueText(special);
  return s;
}

template <typename E>
void fillCombo(QComboBox* combo, const std::vector<E>& values) {
  combo->clear();
  for (E v : values) combo->addItem(qs(to_string(v)), static_cast<int>(v));
}

template <typename E>
E comboValue(const QComboBox* combo) {
  return static_cast<E>(combo->currentData().toInt());
}

void selectValue(QComboBox* combo, int value) {
  int i = combo->findData(value);
  if (i >= 0) combo->setCurrentIndex(i);
}

}  // namespace

OpEditor::OpEditor(QWidget* parent) : QWidget(parent) {
  const OperatingPoint defaults;
  batch_ = spin(0, 100000, defaults.batch);
  context_ = spin(0, 1 << 24, defaults.context);
  context_->setSingleStep(1024);
  context_lengths_ = new QLineEdit;
  context_lengths_->setPlaceholderText(tr("optional ragged lengths: 512,4096,…"));
  q_heads_ = spin(0, 1024, defaults.q_heads);
  kv_heads_ = spin(0, 1024, defaults.kv_heads);
  head_dim_ = spin(0, 1024, defaults.head_dim);
  page_size_ = spin(0, 4096, defaults.page_size);
  splits_ = spin(0, 4096, defaults.splits, tr("auto"));
  kv_ = new QComboBox;
  fillCombo(kv_, std::vector<KvDtype>{KvDtype::k16v16, KvDtype::k8v16, KvDtype::k16v8, KvDtype::k8v8});
  k_path_ = new QComboBox;
  mode_ = new QComboBox;
  k_repr_ = new QComboBox;
  fillCombo(k_repr_, std::vector<KRepr>{KRepr::plain, KRepr::prebias});
  rope_ = new QComboBox;
  fillCombo(rope_, std::vector<RopeLayout>{RopeLayout::post_rope, RopeLayout::pre_rope});
  scale_ = new QComboBox;
  fillCombo(scale_, std::vector<ScaleGranularity>{ScaleGranularity::per_tensor, ScaleGranularity::per_head});
  cache_ = new QComboBox;
  fillCombo(cache_, std::vector<CacheState>{CacheState::l2_warm, CacheState::hbm_cold});
  gpu_model_ = new QComboBox;

  field_widgets_ = {{"batch", batch_},         {"context", context_},   {"context_lengths", context_lengths_},
                    {"q_heads", q_heads_},     {"kv_heads", kv_heads_}, {"head_dim", head_dim_},
                    {"page_size", page_size_}, {"splits", splits_},     {"kv", kv_},
                    {"k_path", k_path_},       {"mode", mode_},         {"k_repr", k_repr_},
                    {"rope", rope_},           {"scale", scale_},       {"cache", cache_}};
  for (auto& [name, w] : field_widgets_) w->setObjectName(QStringLiteral("field_") + name);

  auto* form = new QFormLayout;
  form->addRow(tr("Batch B"), batch_);
  form->addRow(tr("Context S"), context_);
  form->addRow(tr("Ragged lengths"), context_lengths_);
  form->addRow(tr("Q heads Hq"), q_heads_);
  form->addRow(tr("KV heads Hk"), kv_heads_);
  form->addRow(tr("Head dim D"), head_dim_);
  form->addRow(tr("Page size P"), page_size_);
  form->addRow(tr("dtype control"), kv_);
  form->addRow(tr("K path"), k_path_);
  form->addRow(tr("Transform mode"), mode_);
  form->addRow(tr("K representation"), k_repr_);
  form->addRow(tr("RoPE layout"), rope_);
  form->addRow(tr("Scale"), scale_);
  form->addRow(tr("Cache state"), cache_);
  form->addRow(tr("Split-KV"), splits_);
  form->addRow(tr("Predict for GPU"), gpu_model_);

  problem_list_ = new QLabel;
  problem_list_->setWordWrap(true);
  problem_list_->setStyleSheet(QStringLiteral("color: #b41e1e;"));
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(problem_list_);
  layout->addStretch();

  refillPathAndMode(defaults.k_path, defaults.mode);
  selectValue(kv_, static_cast<int>(defaults.kv));
  selectValue(k_repr_, static_cast<int>(defaults.k_repr));
  selectValue(rope_, static_cast<int>(defaults.rope));
  selectValue(scale_, static_cast<int>(defaults.scale));
  selectValue(cache_, static_cast<int>(defaults.cache));
  refillPathAndMode(defaults.k_path, defaults.mode);

  for (QSpinBox* s : {batch_, context_, q_heads_, kv_heads_, head_dim_, page_size_, splits_})
    connect(s, &QSpinBox::valueChanged, this, &OpEditor::onEdited);
  connect(context_lengths_, &QLineEdit::editingFinished, this, &OpEditor::onEdited);
  connect(kv_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_) return;
    refillPathAndMode(comboValue<KPath>(k_path_), comboValue<TransformMode>(mode_));
    onEdited();
  });
  connect(k_path_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_) return;
    refillPathAndMode(comboValue<KPath>(k_path_), comboValue<TransformMode>(mode_));
    onEdited();
  });
  for (QComboBox* c : {mode_, k_repr_, rope_, scale_, cache_})
    connect(c, &QComboBox::currentIndexChanged, this, &OpEditor::onEdited);
  connect(gpu_model_, &QComboBox::currentIndexChanged, this, [this] {
    if (!updating_) emit gpuModelChanged(gpuModel());
  });
  validate();
}

void OpEditor::refillPathAndMode(KPath wantedPath, TransformMode wantedMode) {
  const bool was_updating = updating_;
  updating_ = true;
  const KvDtype kv = comboValue<KvDtype>(kv_);
  std::vector<KPath> paths = valid_k_paths(kv);
  fillCombo(k_path_, paths);
  bool path_ok = std::find(paths.begin(), paths.end(), wantedPath) != paths.end();
  selectValue(k_path_, static_cast<int>(path_ok ? wantedPath : default_k_path(kv)));
  const KPath path = comboValue<KPath>(k_path_);
  std::vector<TransformMode> modes = valid_modes(kv, path);
  fillCombo(mode_, modes);
  bool mode_ok = std::find(modes.begin(), modes.end(), wantedMode) != modes.end();
  selectValue(mode_, static_cast<int>(mode_ok ? wantedMode : default_mode(kv, path)));
  updating_ = was_updating;
}

OperatingPoint OpEditor::op() const {
  OperatingPoint op;
  op.batch = batch_->value();
  op.context = context_->value();
  op.q_heads = q_heads_->value();
  op.kv_heads = kv_heads_->value();
  op.head_dim = head_dim_->value();
  op.page_size = page_size_->value();
  op.splits = splits_->value();
  op.kv = comboValue<KvDtype>(kv_);
  op.k_path = comboValue<KPath>(k_path_);
  op.mode = comboValue<TransformMode>(mode_);
  op.k_repr = comboValue<KRepr>(k_repr_);
  op.rope = comboValue<RopeLayout>(rope_);
  op.scale = comboValue<ScaleGranularity>(scale_);
  op.cache = comboValue<CacheState>(cache_);
  const QString lengths = context_lengths_->text().trimmed();
  if (!lengths.isEmpty()) {
    for (const QString& part : lengths.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
      bool ok = false;
      int v = part.trimmed().toInt(&ok);
      op.context_lengths.push_back(ok ? v : -1);  // -1 makes validation name the field
    }
  }
  return op;
}

void OpEditor::setOp(const OperatingPoint& op) {
  updating_ = true;
  {
    const QSignalBlocker blockers[] = {
        QSignalBlocker(batch_),    QSignalBlocker(context_),  QSignalBlocker(q_heads_),
        QSignalBlocker(kv_heads_), QSignalBlocker(head_dim_), QSignalBlocker(page_size_),
        QSignalBlocker(splits_),   QSignalBlocker(kv_),       QSignalBlocker(k_path_),
        QSignalBlocker(mode_),     QSignalBlocker(k_repr_),   QSignalBlocker(rope_),
        QSignalBlocker(scale_),    QSignalBlocker(cache_),    QSignalBlocker(context_lengths_)};
    batch_->setValue(op.batch);
    context_->setValue(op.context);
    q_heads_->setValue(op.q_heads);
    kv_heads_->setValue(op.kv_heads);
    head_dim_->setValue(op.head_dim);
    page_size_->setValue(op.page_size);
    splits_->setValue(op.splits);
    selectValue(kv_, static_cast<int>(op.kv));
    refillPathAndMode(op.k_path, op.mode);
    selectValue(k_repr_, static_cast<int>(op.k_repr));
    selectValue(rope_, static_cast<int>(op.rope));
    selectValue(scale_, static_cast<int>(op.scale));
    selectValue(cache_, static_cast<int>(op.cache));
    QStringList lengths;
    for (int l : op.context_lengths) lengths << QString::number(l);
    context_lengths_->setText(lengths.join(QLatin1Char(',')));
  }
  updating_ = false;
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
  validate();
  emit opChanged(op());
}

void OpEditor::validate() {
  problems_.clear();
  QStringList lines;
  for (const ValidationError& e : op().problems()) {
    QString field = qs(e.field());
    QString& slot = problems_[field];
    slot += (slot.isEmpty() ? QString() : QStringLiteral("\n")) + qs(e.what());
    lines << qs(e.what());
  }
  for (auto& [name, w] : field_widgets_) {
    auto it = problems_.find(name);
    if (it != problems_.end()) {
      w->setStyleSheet(QStringLiteral("border: 2px solid #d22; border-radius: 2px;"));
      w->setToolTip(it->second);
    } else {
      w->setStyleSheet(QString());
      w->setToolTip(QString());
    }
  }
  problem_list_->setText(lines.join(QLatin1Char('\n')));
}

}  // namespace tilepath::ui
