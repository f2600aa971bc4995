#include "ui/views/run_panel.h"

#include <algorithm>

#include <QComboBox>
#include <QDateTime>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "core/numerics/decode_problem.h"
#include "ui/database_session.h"
#include "ui/qt_text.h"

namespace tilepath::ui {

RunPanel::RunPanel(PluginHost* host, DatabaseSession* session, QWidget* parent)
    : QWidget(parent), host_(host), session_(session) {
  controller_ = new RunController(this);
  backend_ = new QComboBox;
  device_ = new QSpinBox;
  device_->setRange(0, 64);
  repeats_ = new QSpinBox;
  repeats_->setObjectName(QStringLiteral("runRepeats"));
  repeats_->setRange(1, 1000);
  repeats_->setValue(20);
  // The inputs' key distribution: the speed is the same, the gate on the case's own
  // inputs (docs/gate.md) is not.
  keys_ = new QComboBox;
  keys_->setObjectName(QStringLiteral("runKeys"));
  for (auto d : {numerics::KeyDistribution::gaussian, numerics::KeyDistribution::heavy_tailed,
                 numerics::KeyDistribution::qwen_bias})
    keys_->addItem(qs(numerics::to_string(d)), qs(numerics::to_string(d)));
  keys_->setToolTip(tr("key distribution of the inputs; the gate on each case's own inputs measures it"));
  run_op_ = new QRadioButton(tr("the operating point in the editor"));
  run_op_->setChecked(true);
  run_spec_ = new QRadioButton(tr("a sweep spec:"));
  run_spec_->setObjectName(QStringLiteral("runSpec"));
  // A spec file carries its own settings (repeats, keys): the fields here do not apply.
  connect(run_spec_, &QRadioButton::toggled, this, [this](bool spec) {
    repeats_->setEnabled(!spec);
    keys_->setEnabled(!spec);
    const QString why = spec ? tr("a sweep spec keeps its own settings.repeats and settings.keys") : QString();
    repeats_->setToolTip(why);
    keys_->setToolTip(spec ? why
                           : tr("key distribution of the inputs; the gate on each case's own inputs measures it"));
  });
  spec_path_ = new QLineEdit;
  spec_path_->setPlaceholderText(tr("sweep spec JSON (docs/sweep-spec.md)"));
  auto* browse = new QPushButton(tr("…"));
  connect(browse, &QPushButton::clicked, this, [this] {
    QString path = QFileDialog::getOpenFileName(
        this, tr("Sweep spec"), QStringLiteral(TILEPATH_SOURCE_DIR "/data/sweeps"), tr("JSON (*.json);;All files (*)"));
    if (!path.isEmpty()) {
      spec_path_->setText(path);
      run_spec_->setChecked(true);
    }
  });
  run_ = new QPushButton(tr("Run"));
  cancel_ = new QPushButton(tr("Cancel"));
  cancel_->setEnabled(false);
  progress_ = new QProgressBar;
  progress_->setRange(0, 1000);
  progress_->setValue(0);
  progress_->setFormat(tr("idle"));
  progress_->setTextVisible(true);
  log_ = new QListWidget;

  connect(run_, &QPushButton::clicked, this, &RunPanel::runClicked);
  connect(cancel_, &QPushButton::clicked, this, [this] {
    controller_->cancel();
    report(tr("cancel requested: the case in flight stops and no other starts"));
  });
  connect(controller_, &RunController::started, this,
          [this](int total) { report(tr("started: %1 cases").arg(total)); });
  connect(controller_, &RunController::progress, this, [this](double fraction, const QString& label) {
    progress_->setValue(int(1000 * std::clamp(fraction, 0.0, 1.0)));
    progress_->setFormat(QStringLiteral("%p% — ") + label);
  });
  connect(controller_, &RunController::caseDone, this,
          [this](const QString& label, bool skipped, const QString& status, const QString& message) {
            if (skipped) {
              report(tr("already stored: %1").arg(label));
              return;
            }
            // Why a case failed (a plugin's error, or "poison:" when it ended two workers) belongs on its line.
            const bool said = status == QLatin1String("ok") || message.isEmpty();
            report(said ? tr("%1: %2").arg(status, label) : tr("%1: %2 — %3").arg(status, label, message));
            emit casesStored();
          });
  connect(controller_, &RunController::finished, this, [this](const RunSummary& s) {
    setRunning(false);
    progress_->setFormat(s.cancelled ? tr("cancelled") : tr("done"));
    report(tr("%1: %2 ran, %3 already stored, %4 failed, %5 unsupported of %6")
               .arg(s.cancelled ? tr("cancelled") : tr("finished"))
               .arg(s.ran)
               .arg(s.skipped_existing)
               .arg(s.failed)
               .arg(s.unsupported)
               .arg(s.total));
    if (s.worker_restarts > 0)
      report(tr("workers restarted %1 time(s); %2 case(s) stored as failed (poison) after ending two workers")
                 .arg(s.worker_restarts)
                 .arg(s.poison.size()));
    emit runFinished(s);
  });
  connect(controller_, &RunController::failed, this, [this](const QString& message) {
    setRunning(false);
    progress_->setFormat(tr("failed"));
    last_error_ = message;
    report(tr("error: %1").arg(message));
    if (!quiet_) QMessageBox::critical(this, tr("Run failed"), message + tr("\n\nCases already stored are kept."));
  });

  auto* form = new QFormLayout;
  form->addRow(tr("Backend"), backend_);
  form->addRow(tr("Device"), device_);
  form->addRow(tr("Repeats"), repeats_);
  form->addRow(tr("Keys"), keys_);
  auto* what = new QVBoxLayout;
  what->addWidget(run_op_);
  auto* spec_row = new QHBoxLayout;
  spec_row->addWidget(run_spec_);
  spec_row->addWidget(spec_path_, 1);
  spec_row->addWidget(browse);
  what->addLayout(spec_row);
  form->addRow(tr("Run"), what);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(run_);
  buttons->addWidget(cancel_);
  buttons->addWidget(progress_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addLayout(buttons);
  layout->addWidget(log_, 1);
  refreshBackends();
}

void RunPanel::refreshBackends() {
  const QString previous = backend_->currentText();
  backend_->clear();
  for (const auto& b : host_->backends())
    backend_->addItem(qs(b->name()) + (b->devices().empty() ? tr(" (no devices)") : QString()), qs(b->name()));
  int keep = backend_->findData(previous);
  if (keep < 0) keep = backend_->findData(QStringLiteral("cpu"));
  backend_->setCurrentIndex(std::max(0, keep));
}

void RunPanel::report(const QString& message) {
  log_->addItem(QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss ")) + message);
  log_->scrollToBottom();
}

void RunPanel::setRunning(bool running) {
  run_->setEnabled(!running);
  cancel_->setEnabled(running);
}

bool RunPanel::startSweep(SweepSpec spec, const QString& backend, bool quiet) {
  quiet_ = quiet;
  auto fail = [&](const QString& message) {
    last_error_ = message;
    report(tr("error: %1").arg(message));
    if (!quiet) QMessageBox::critical(this, tr("Run"), message);
    return false;
  };
  if (!session_->isOpen()) return fail(tr("no database is open: open or create one first (File ▸ Open)"));
  const QString name = backend.isEmpty() ? qs(spec.backend) : backend;
  const Backend* b = host_->find(ss(name));
  if (!b) {
    QStringList known;
    for (const auto& x : host_->backends()) known << qs(x->name());
    return fail(tr("backend '%1' is not loaded; loaded: %2").arg(name, known.join(QStringLiteral(", "))));
  }
  if (b->devices().empty()) return fail(tr("backend '%1' has no devices: %2").arg(name, qs(b->no_device_reason())));
  spec.backend = ss(name);
  const QString command =
      QStringLiteral("tilepath-gui run %1 on %2 (%3 cases)").arg(qs(spec.name), name).arg(spec.cases.size());
  if (!controller_->start(spec, b, session_->path(), command)) return fail(tr("a run is already in progress"));
  setRunning(true);
  progress_->setValue(0);
  progress_->setFormat(tr("starting"));
  return true;
}

void RunPanel::runClicked() {
  SweepSpec spec;
  if (run_spec_->isChecked()) {
    try {
      spec = load_sweep_spec(ss(spec_path_->text()));
    } catch (const std::exception& e) {
      QMessageBox::critical(this, tr("Sweep spec"), qs(e.what()));
      return;
    }
  } else {
    std::vector<ValidationError> problems = op_.problems();
    if (!problems.empty()) {
      QMessageBox::warning(this, tr("Run"),
                           tr("The operating point is not valid:\n%1").arg(qs(problems.front().what())));
      return;
    }
    spec.name = "gui-case";
    spec.cases = {op_};
    spec.settings.repeats = repeats_->value();  // a spec file keeps its own settings
    spec.settings.key_distribution = ss(keys_->currentData().toString());
  }
  spec.settings.device = device_->value();
  startSweep(std::move(spec), backend_->currentData().toString());
}

}  // namespace tilepath::ui
