#include "ui/views/profiler_panel.h"

#include <algorithm>
#include <cmath>

#include <QDialog>
#include <QDialogButtonBox>
#include <QFile>
#include <QFileDialog>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include "ui/qt_text.h"

namespace tilepath::ui {
namespace {

// Display order: memory, occupancy and time first, then stalls (largest first), then the rest.
int group_of(const std::string& name) {
  if (name.rfind("ncu_dram", 0) == 0 || name == "ncu_l2_hit_rate_pct") return 0;
  if (name == "ncu_achieved_occupancy_pct" || name == "ncu_duration_us" || name == "ncu_sm_frequency_ghz") return 1;
  if (name.rfind("ncu_stall_", 0) == 0) return 2;
  if (name.rfind("ncu_smem_bank_conflicts", 0) == 0) return 3;
  return 4;
}

bool looks_like_text(const Artifact& a) {
  const std::string& mime = a.mime;
  if (mime.rfind("text/", 0) == 0 || mime == "application/json" || mime == "application/csv") return true;
  const std::vector<std::uint8_t>& data = a.data;
  const std::size_t n = std::min<std::size_t>(data.size(), 4096);
  for (std::size_t i = 0; i < n; ++i)
    if (data[i] == 0) return false;
  return true;
}

}  // namespace

ProfilerPanel::ProfilerPanel(QWidget* parent) : QWidget(parent) {
  title_ = new QLabel(tr("<b>Profiler</b> — select a case"));
  metrics_ = new QTableWidget(0, 3);
  metrics_->setHorizontalHeaderLabels({tr("ncu metric"), tr("value"), tr("unit")});
  metrics_->verticalHeader()->hide();
  metrics_->horizontalHeader()->setStretchLastSection(true);
  metrics_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  artifacts_ = new QListWidget;
  artifacts_->setMaximumHeight(90);
  view_ = new QPushButton(tr("View"));
  view_->setToolTip(tr("Show a text file (report, CSV, JSON) read-only"));
  view_->setEnabled(false);
  save_ = new QPushButton(tr("Save as…"));
  save_->setToolTip(tr("Write the file's bytes as stored"));
  save_->setEnabled(false);
  connect(artifacts_, &QListWidget::currentRowChanged, this, [this] {
    const QString name = selectedArtifactName();
    view_->setEnabled(isTextArtifact(name));
    save_->setEnabled(!name.isEmpty());
  });
  // A double click views a text file and offers to save any other.
  connect(artifacts_, &QListWidget::itemDoubleClicked, this, [this] {
    if (isTextArtifact(selectedArtifactName()))
      viewSelectedArtifact();
    else
      saveSelectedArtifact();
  });
  connect(view_, &QPushButton::clicked, this, [this] { viewSelectedArtifact(); });
  connect(save_, &QPushButton::clicked, this, [this] { saveSelectedArtifact(); });
  auto* buttons = new QHBoxLayout;
  buttons->addStretch(1);
  buttons->addWidget(view_);
  buttons->addWidget(save_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(title_);
  layout->addWidget(metrics_, 1);
  layout->addWidget(new QLabel(tr("Files kept with the case (raw reports, kernel metadata)")));
  layout->addWidget(artifacts_);
  layout->addLayout(buttons);
}

void ProfilerPanel::setCase(const CaseRecord& rec) {
  rec_ = rec;
  std::vector<const Measurement*> ncu;
  for (const Measurement& m : rec.measurements)
    if (m.name.rfind("ncu_", 0) == 0) ncu.push_back(&m);
  std::stable_sort(ncu.begin(), ncu.end(), [](const Measurement* a, const Measurement* b) {
    const int ga = group_of(a->name), gb = group_of(b->name);
    if (ga != gb) return ga < gb;
    return ga == 2 && a->value > b->value;  // stall reasons: largest first
  });
  metrics_->setRowCount(static_cast<int>(ncu.size()));
  for (int i = 0; i < static_cast<int>(ncu.size()); ++i) {
    metrics_->setItem(i, 0, new QTableWidgetItem(qs(ncu[i]->name)));
    metrics_->setItem(i, 1, new QTableWidgetItem(formatNumber(ncu[i]->value)));
    metrics_->setItem(i, 2, new QTableWidgetItem(qs(ncu[i]->unit)));
  }
  metrics_->resizeColumnsToContents();
  artifacts_->clear();
  view_->setEnabled(false);
  save_->setEnabled(false);
  for (const Artifact& a : rec.artifacts)
    artifacts_->addItem(QStringLiteral("%1  (%2, %3 B)").arg(qs(a.name), qs(a.mime)).arg(a.data.size()));
  if (rec.id == 0)
    title_->setText(tr("<b>Profiler</b> — select a case"));
  else if (ncu.empty())
    title_->setText(tr("<b>Profiler</b> — case %1 has no profiler measurements (`tilepath run --profile`, or "
                       "`tilepath attach --ncu-csv`)")
                        .arg(rec.id));
  else
    title_->setText(tr("<b>Profiler</b> — case %1: %2 ncu measurements").arg(rec.id).arg(ncu.size()));
}

const Artifact* ProfilerPanel::artifact(const QString& name) const {
  for (const Artifact& a : rec_.artifacts)
    if (qs(a.name) == name) return &a;
  return nullptr;
}

QString ProfilerPanel::selectedArtifactName() const {
  const int row = artifacts_->currentRow();
  if (row < 0 || row >= static_cast<int>(rec_.artifacts.size())) return {};
  return qs(rec_.artifacts[static_cast<std::size_t>(row)].name);
}

bool ProfilerPanel::isTextArtifact(const QString& name) const {
  const Artifact* a = artifact(name);
  return a && looks_like_text(*a);
}

QString ProfilerPanel::artifactText(const QString& name) const {
  const Artifact* a = artifact(name);
  if (!a) return QString();
  if (!looks_like_text(*a))
    return tr("%1 is binary (%2, %3 bytes): Save as… writes its bytes").arg(name, qs(a->mime)).arg(a->data.size());
  return QString::fromUtf8(reinterpret_cast<const char*>(a->data.data()), static_cast<qsizetype>(a->data.size()));
}

QDialog* ProfilerPanel::viewArtifact(const QString& name) {
  if (!isTextArtifact(name)) return nullptr;
  auto* dialog = new QDialog(this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->setWindowTitle(tr("%1 — case %2").arg(name).arg(rec_.id));
  auto* text = new QPlainTextEdit(artifactText(name));
  text->setReadOnly(true);
  text->setLineWrapMode(QPlainTextEdit::NoWrap);
  text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
  QPushButton* save = buttons->addButton(tr("Save as…"), QDialogButtonBox::ActionRole);
  connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::close);
  connect(save, &QPushButton::clicked, dialog, [this, name] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save %1").arg(name), name);
    QString error;
    if (!path.isEmpty() && !saveArtifact(name, path, &error)) QMessageBox::warning(this, tr("Save"), error);
  });
  auto* layout = new QVBoxLayout(dialog);
  layout->addWidget(text);
  layout->addWidget(buttons);
  dialog->resize(900, 600);
  dialog->show();
  return dialog;
}

bool ProfilerPanel::saveArtifact(const QString& name, const QString& path, QString* error) const {
  const Artifact* a = artifact(name);
  if (!a) {
    if (error) *error = tr("case %1 has no file %2").arg(rec_.id).arg(name);
    return false;
  }
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
      file.write(reinterpret_cast<const char*>(a->data.data()), static_cast<qint64>(a->data.size())) !=
          static_cast<qint64>(a->data.size())) {
    if (error) *error = tr("%1: cannot write (%2)").arg(path, file.errorString());
    return false;
  }
  return true;
}

void ProfilerPanel::viewSelectedArtifact() { viewArtifact(selectedArtifactName()); }

void ProfilerPanel::saveSelectedArtifact() {
  const QString name = selectedArtifactName();
  if (name.isEmpty()) return;
  const QString path = QFileDialog::getSaveFileName(this, tr("Save %1 of case %2").arg(name).arg(rec_.id), name);
  QString error;
  if (!path.isEmpty() && !saveArtifact(name, path, &error)) QMessageBox::warning(this, tr("Save"), error);
}

}  // namespace tilepath::ui
