#include "ui/views/backends_view.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

#include "ui/models/backends_model.h"
#include "ui/qt_text.h"

namespace tilepath::ui {

BackendsView::BackendsView(PluginHost* host, QWidget* parent) : QWidget(parent), host_(host) {
  model_ = new BackendsModel(this);
  model_->setHost(host_);

  auto* title =
      new QLabel(tr("<b>Backend plugins</b> — one row per device; a plugin whose runtime is missing loads "
                    "and reports why it has no devices."));
  title->setWordWrap(true);
  table_ = new QTableView;
  table_->setModel(model_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->hide();
  table_->setAlternatingRowColors(true);

  QStringList dirs;
  for (const std::string& d : PluginHost::search_dirs()) dirs << qs(d);
  search_dirs_ = new QLabel(tr("Search path: %1").arg(dirs.join(QStringLiteral(" : "))));
  search_dirs_->setWordWrap(true);
  search_dirs_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* load = new QPushButton(tr("Load plugin…"));
  connect(load, &QPushButton::clicked, this, &BackendsView::chooseAndLoadPlugin);
  auto* rediscover = new QPushButton(tr("Rescan"));
  connect(rediscover, &QPushButton::clicked, this, [this] {
    host_->discover();
    refresh();
    emit backendsChanged();
  });

  auto* buttons = new QHBoxLayout;
  buttons->addWidget(load);
  buttons->addWidget(rediscover);
  buttons->addStretch();

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(title);
  layout->addWidget(table_, 1);
  layout->addWidget(search_dirs_);
  layout->addLayout(buttons);
  refresh();
}

void BackendsView::refresh() {
  model_->refresh();
  table_->resizeColumnsToContents();
}

bool BackendsView::loadPlugin(const QString& path) {
  const Backend* loaded = host_->load_file(ss(path));
  refresh();
  emit backendsChanged();
  if (!loaded) {
    QString reason = host_->problems().empty() ? tr("unknown reason") : qs(host_->problems().back().reason);
    QMessageBox::warning(this, tr("Load plugin"), tr("%1 was not loaded: %2").arg(path, reason));
    return false;
  }
  return true;
}

void BackendsView::chooseAndLoadPlugin() {
  QString path = QFileDialog::getOpenFileName(this, tr("Load backend plugin"), QString(),
                                              tr("Shared libraries (*.so *.dylib *.dll);;All files (*)"));
  if (!path.isEmpty()) loadPlugin(path);
}

}  // namespace tilepath::ui
