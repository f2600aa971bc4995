#pragma once
// Run panel: run the edited operating point or a sweep spec on any backend from
// the worker thread (the plugin in `tilepath worker` processes, ui/run_worker.h), with
// progress, cancel and a log; stored cases show up in the other views as they land.

#include <QWidget>

#include "core/operating_point.h"
#include "core/plugin_host.h"
#include "ui/run_worker.h"

class QComboBox;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QRadioButton;
class QSpinBox;

namespace tilepath::ui {

class DatabaseSession;

class RunPanel : public QWidget {
  Q_OBJECT
 public:
  RunPanel(PluginHost* host, DatabaseSession* session, QWidget* parent = nullptr);
  RunController* controller() const { return controller_; }
  // Starts spec on the named backend (spec.backend when empty). Errors go to a
  // message box unless quiet; returns whether the run started.
  bool startSweep(SweepSpec spec, const QString& backend = {}, bool quiet = false);
  QString lastError() const { return last_error_; }

 public slots:
  void setOp(const tilepath::OperatingPoint& op) { op_ = op; }
  void refreshBackends();
  void runClicked();

 signals:
  void casesStored();  // a case landed in the database
  void runFinished(const tilepath::ui::RunSummary& summary);

 private:
  PluginHost* host_;
  DatabaseSession* session_;
  RunController* controller_;
  OperatingPoint op_;
  QString last_error_;
  QComboBox* backend_;
  QSpinBox *device_, *repeats_;
  QComboBox* keys_;  // the inputs' key distribution for the operating-point run
  QRadioButton *run_op_, *run_spec_;
  QLineEdit* spec_path_;
  QPushButton *run_, *cancel_;
  QProgressBar* progress_;
  QListWidget* log_;
  bool quiet_ = false;
  void setRunning(bool running);
  void report(const QString& message);
};

}  // namespace tilepath::ui
