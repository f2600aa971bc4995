#include "ui/views/profiler_panel.h"

#include <algorithm>
#include <cmath>

#include <QDialog>
#include <QFontDatabase>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
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

bool looks_like_text(const std::vector<std::uint8_t>& data) {
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
  open_ = new QPushButton(tr("Open"));
  open_->setEnabled(false);
  connect(artifacts_, &QListWidget::currentRowChanged, this, [this](int row) { open_->setEnabled(row >= 0); });
  connect(artifacts_, &QListWidget::itemDoubleClicked, this, [this] { openSelectedArtifact(); });
  connect(open_, &QPushButton::clicked, this, [this] { openSelectedArtifact(); });
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(title_);
  layout->addWidget(metrics_, 1);
  layout->addWidget(new QLabel(tr("Files kept with the case (raw reports, kernel metadata)")));
  layout->addWidget(artifacts_);
  layout->addWidget(open_, 0, Qt::AlignRight);
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

QString ProfilerPanel::artifactText(const QString& name) const {
  for (const Artifact& a : rec_.artifacts) {
    if (qs(a.name) != name) continue;
    if (!looks_like_text(a.data))
      return tr("%1 is binary (%2, %3 bytes): `tilepath export` or the database holds its bytes")
          .arg(name, qs(a.mime))
          .arg(a.data.size());
    return QString::fromUtf8(reinterpret_cast<const char*>(a.data.data()), static_cast<int>(a.data.size()));
  }
  return QString();
}

void ProfilerPanel::openSelectedArtifact() {
  const int row = artifacts_->currentRow();
  if (row < 0 || row >= static_cast<int>(rec_.artifacts.size())) return;
  const QString name = qs(rec_.artifacts[static_cast<std::size_t>(row)].name);
  auto* dialog = new QDialog(this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->setWindowTitle(tr("%1 — case %2").arg(name).arg(rec_.id));
  auto* text = new QPlainTextEdit(artifactText(name));
  text->setReadOnly(true);
  text->setLineWrapMode(QPlainTextEdit::NoWrap);
  text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  auto* layout = new QVBoxLayout(dialog);
  layout->addWidget(text);
  dialog->resize(900, 600);
  dialog->show();
}

}  // namespace tilepath::ui
