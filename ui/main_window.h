#pragma once
// The main window: view switcher (Backends, Stage graph, Timeline, Charts,
// Break-even, Dispatch, Gate, Runs, Run), operating-point editor dock, File menu (open, recent,
// merge, export), status bar naming the open database, settings persistence.

#include <future>
#include <memory>
#include <optional>
#include <vector>

#include <QHash>
#include <QList>
#include <QMainWindow>
#include <QSet>

#include "core/analysis/gate_table.h"
#include "core/plugin_host.h"
#include "core/sweep.h"
#include "ui/variant_analysis.h"

class QLabel;
class QTimer;
class QMenu;
class QProgressBar;
class QTabWidget;

namespace tilepath::ui {

class BackendsView;
class BreakEvenView;
class ChartsView;
class ElidedLabel;
class DatabaseSession;
class DispatchView;
class GateView;
class OpEditor;
class RunPanel;
class RunsView;
class StageGraphView;
class TimelineView;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  struct Options {
    bool restoreSettings = true;    // off for --screenshot (deterministic size/layout)
    bool interactiveErrors = true;  // message boxes; off = errors only in lastError()/status bar
    // Cases read on a thread while the window is already usable (DatabaseSession::openInBackground);
    // off: openDatabase() returns with every view's data (tests).
    bool loadInBackground = false;
  };
  explicit MainWindow(Options options, QWidget* parent = nullptr);
  MainWindow() : MainWindow(Options{}) {}
  ~MainWindow() override;

  // View names as on the command line: backends, graph, timeline, charts, breakeven, dispatch, gate, runs, run.
  static QStringList viewNames();
  bool showView(const QString& name);
  QWidget* currentViewWidget() const;
  // How often a view was given the database's cases: views are filled when shown (and
  // again when shown after the database changed), so a view never shown costs nothing.
  int viewFills(const QString& name) const;

  // Opens a database; on failure keeps the current one, shows the reason
  // (message box + status bar) and returns false. Never modifies a file it cannot open.
  bool openDatabase(const QString& path);
  // The startup choice: bundled H200 sweep, else the demo database (filled by a
  // sim + cpu sweep in the worker when empty). waitForDemo blocks until that run ends.
  void openStartupDatabase(bool waitForDemo = false);

  // Selects, in Runs, the case the stage graph measures and its K16/V8 (else any
  // other-dtype) counterpart at the same shape, so the comparison shows a real pair.
  void selectComparisonExample();

  QString lastError() const { return last_error_; }
  DatabaseSession* session() const { return session_; }
  PluginHost* pluginHost() { return &host_; }
  OpEditor* editor() const { return editor_; }
  StageGraphView* graphView() const { return graph_view_; }
  TimelineView* timelineView() const { return timeline_view_; }
  ChartsView* chartsView() const { return charts_view_; }
  BreakEvenView* breakEvenView() const { return break_even_view_; }
  DispatchView* dispatchView() const { return dispatch_view_; }
  GateView* gateView() const { return gate_view_; }
  RunsView* runsView() const { return runs_view_; }
  RunPanel* runPanel() const { return run_panel_; }
  BackendsView* backendsView() const { return backends_view_; }
  const VariantAnalysis* analysis() const { return analysis_ ? &*analysis_ : nullptr; }

 public slots:
  void updateAnalysis();
  // The status bar's message, elided to the room left of the database label (whole on
  // hover), cleared after timeoutMs (0: kept until the next one).
  void showStatusMessage(const QString& message, int timeoutMs = 10000);

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  Options options_;
  PluginHost host_;
  DatabaseSession* session_;
  QTabWidget* tabs_;
  QList<QWidget*> views_;  // in tab order; each tab holds its view in a scroll area
  OpEditor* editor_;
  BackendsView* backends_view_;
  StageGraphView* graph_view_;
  TimelineView* timeline_view_;
  ChartsView* charts_view_;
  BreakEvenView* break_even_view_;
  DispatchView* dispatch_view_;
  GateView* gate_view_;
  RunsView* runs_view_;
  RunPanel* run_panel_;
  ElidedLabel* db_label_;
  ElidedLabel* status_message_;  // in place of QStatusBar::showMessage, which paints under the permanent widgets
  QTimer* status_timeout_;
  QLabel* loading_label_;
  QProgressBar* loading_bar_;
  QSet<QWidget*> stale_views_;  // views whose data is older than the database's
  // The gate table of a large list, built on another thread while the GUI thread fills the
  // view shown (prebuildGateTable), and the list it is built from.
  std::future<analysis::GateTable> gate_table_;
  std::shared_ptr<const std::vector<CaseSummary>> gate_table_cases_;
  QHash<QWidget*, int> view_fills_;
  QMenu* recent_menu_;
  std::optional<CaseSummary> selected_case_;
  std::optional<VariantAnalysis> analysis_;
  std::vector<std::pair<SweepSpec, QString>> pending_demo_;  // (spec, backend) still to run
  QString last_error_;

  void buildMenus();
  void showError(const QString& title, const QString& message);
  void onDatabaseChanged();
  void fillView(QWidget* view);  // gives a stale view the database's cases
  void prebuildGateTable();      // for a stale gate view over a large list
  void updateDatabaseLabel();
  void addRecentFile(const QString& path);
  void rebuildRecentMenu();
  void startNextDemoSweep();
  // File actions
  void openDialog();
  void mergeFromDialog();
  void reportMerge(const QString& what, const MergeResult& result);
  void mergeIntoDialog();
  void exportSubsetDialog();
  void exportViewDialog();
  void exportTableDialog();
};

}  // namespace tilepath::ui
