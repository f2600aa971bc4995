#include "ui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QScrollArea>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>

#include "core/analysis/case_match.h"
#include "core/perf/gpu_model.h"
#include "ui/case_filter_text.h"
#include "ui/database_session.h"
#include "ui/elided_label.h"
#include "ui/models/backends_model.h"
#include "ui/models/break_even_model.h"
#include "ui/models/dispatch_model.h"
#include "ui/models/gate_model.h"
#include "ui/models/stage_table_model.h"
#include "ui/models/sweep_series_model.h"
#include "ui/qt_text.h"
#include "ui/startup.h"
#include "ui/table_export.h"
#include "ui/views/backends_view.h"
#include "ui/views/break_even_view.h"
#include "ui/views/charts_view.h"
#include "ui/views/dispatch_view.h"
#include "ui/views/gate_view.h"
#include "ui/views/op_editor.h"
#include "ui/views/run_panel.h"
#include "ui/views/runs_view.h"
#include "ui/views/stage_graph_view.h"
#include "ui/views/timeline_view.h"
#include "ui/widget_export.h"

namespace tilepath::ui {

namespace {
constexpr int kMaxRecent = 8;
// A list this long takes views a few hundred ms each to fill.
constexpr std::size_t kManyCases = 20000;
const QString kRecentKey = QStringLiteral("recentFiles");
}  // namespace

QStringList MainWindow::viewNames() {
  // In tab order: showView() picks the tab by this index.
  return {QStringLiteral("backends"), QStringLiteral("graph"),     QStringLiteral("timeline"),
          QStringLiteral("charts"),   QStringLiteral("breakeven"), QStringLiteral("dispatch"),
          QStringLiteral("gate"),     QStringLiteral("runs"),      QStringLiteral("run")};
}

MainWindow::MainWindow(Options options, QWidget* parent) : QMainWindow(parent), options_(options) {
  setWindowTitle(tr("tilepath — FP8 KV-cache decode attention explorer"));
  host_.discover();
  session_ = new DatabaseSession(this);

  backends_view_ = new BackendsView(&host_);
  graph_view_ = new StageGraphView;
  timeline_view_ = new TimelineView;
  charts_view_ = new ChartsView;
  break_even_view_ = new BreakEvenView;
  dispatch_view_ = new DispatchView;
  gate_view_ = new GateView;
  runs_view_ = new RunsView(session_);
  run_panel_ = new RunPanel(&host_, session_);

  tabs_ = new QTabWidget;
  tabs_->setDocumentMode(true);
  const std::pair<QWidget*, QString> views[] = {{backends_view_, tr("Backends")},
                                                {graph_view_, tr("Stage graph")},
                                                {timeline_view_, tr("Timeline")},
                                                {charts_view_, tr("Charts")},
                                                {break_even_view_, tr("Break-even")},
                                                {dispatch_view_, tr("Dispatch")},
                                                {gate_view_, tr("Gate")},
                                                {runs_view_, tr("Runs")},
                                                {run_panel_, tr("Run")}};
  for (const auto& [view, title] : views) {
    // A view wider or taller than the room it gets (charts, timeline at 1024×700) scrolls
    // instead of making the window larger than a small screen.
    auto* room = new QScrollArea;
    room->setFrameShape(QFrame::NoFrame);
    room->setWidgetResizable(true);
    room->setWidget(view);
    tabs_->addTab(room, title);
    views_ << view;
  }
  setCentralWidget(tabs_);

  editor_ = new OpEditor;
  QStringList gpu_ids;
  try {
    for (const perf::GpuModel& g : perf::load_gpu_models()) gpu_ids << qs(g.id);
  } catch (const std::exception& e) {
    showStatusMessage(tr("GPU models not loaded: %1").arg(qs(e.what())), 10000);
  }
  editor_->setGpuModels(gpu_ids);
  auto* scroll = new QScrollArea;
  scroll->setWidget(editor_);
  scroll->setWidgetResizable(true);
  auto* dock = new QDockWidget(tr("Operating point"));
  dock->setObjectName(QStringLiteral("operatingPointDock"));
  dock->setWidget(scroll);
  dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
  addDockWidget(Qt::LeftDockWidgetArea, dock);

  // The message and the database label each elide to their own room: QStatusBar's own
  // temporary message is painted across the whole bar, under the permanent widgets.
  status_message_ = new ElidedLabel;
  status_message_->setObjectName(QStringLiteral("statusMessage"));
  status_timeout_ = new QTimer(this);
  status_timeout_->setSingleShot(true);
  connect(status_timeout_, &QTimer::timeout, this, [this] { status_message_->setFullText(QString()); });
  statusBar()->addWidget(status_message_, 1);
  db_label_ = new ElidedLabel(Qt::ElideMiddle);
  db_label_->setObjectName(QStringLiteral("databaseLabel"));
  // A large file's cases take seconds to read: say so while the window stays usable.
  loading_label_ = new QLabel;
  loading_bar_ = new QProgressBar;
  loading_bar_->setRange(0, 0);
  loading_bar_->setMaximumWidth(160);
  loading_label_->hide();
  loading_bar_->hide();
  statusBar()->addPermanentWidget(loading_label_);
  statusBar()->addPermanentWidget(loading_bar_);
  statusBar()->addPermanentWidget(db_label_);
  buildMenus();

  connect(editor_, &OpEditor::opChanged, this, [this](const OperatingPoint& op) {
    run_panel_->setOp(op);
    charts_view_->followOperatingPoint(op);
    break_even_view_->followOperatingPoint(op);
    updateAnalysis();
  });
  connect(editor_, &OpEditor::gpuModelChanged, this, &MainWindow::updateAnalysis);
  connect(timeline_view_, &TimelineView::tilesChanged, this, &MainWindow::updateAnalysis);
  // A case picked in another database means nothing here: forget it before the views refresh.
  connect(session_, &DatabaseSession::opened, this, [this] { selected_case_.reset(); });
  connect(session_, &DatabaseSession::changed, this, &MainWindow::onDatabaseChanged);
  connect(session_, &DatabaseSession::loadingStarted, this, [this] {
    std::int64_t count = -1;
    try {
      if (session_->store()) count = session_->store()->case_count();
    } catch (const std::exception&) {
    }
    loading_label_->setText(count >= 0 ? tr("Reading %L1 cases…").arg(count) : tr("Reading cases…"));
    loading_label_->show();
    loading_bar_->show();
  });
  connect(session_, &DatabaseSession::loadingFinished, this, [this] {
    loading_label_->hide();
    loading_bar_->hide();
  });
  connect(tabs_, &QTabWidget::currentChanged, this, [this] { fillView(currentViewWidget()); });
  connect(runs_view_, &RunsView::caseSelected, this, [this](const CaseSummary& c) {
    selected_case_ = c;
    editor_->setOp(c.record.op);  // emits opChanged → updateAnalysis
  });
  connect(backends_view_, &BackendsView::backendsChanged, run_panel_, &RunPanel::refreshBackends);
  connect(run_panel_, &RunPanel::casesStored, session_, &DatabaseSession::reload);
  connect(run_panel_, &RunPanel::runFinished, this, [this] {
    session_->reload();
    startNextDemoSweep();
  });
  connect(run_panel_->controller(), &RunController::failed, this, [this] { startNextDemoSweep(); });

  resize(1440, 900);
  if (options_.restoreSettings) {
    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    tabs_->setCurrentIndex(settings.value(QStringLiteral("window/tab"), 1).toInt());
  }
  run_panel_->setOp(editor_->op());
  updateAnalysis();
  onDatabaseChanged();
}

MainWindow::~MainWindow() = default;

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open database…"), QKeySequence::Open, this, &MainWindow::openDialog);
  recent_menu_ = file->addMenu(tr("Open &recent"));
  rebuildRecentMenu();
  file->addSeparator();
  file->addAction(tr("Merge &from…"), this, &MainWindow::mergeFromDialog);
  file->addAction(tr("Merge &into…"), this, &MainWindow::mergeIntoDialog);
  file->addAction(tr("Export &subset…"), this, &MainWindow::exportSubsetDialog);
  file->addSeparator();
  file->addAction(tr("Export view as PNG/SVG…"), this, &MainWindow::exportViewDialog);
  file->addAction(tr("Export table as CSV…"), this, &MainWindow::exportTableDialog);
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  for (int i = 0; i < tabs_->count(); ++i) {
    QAction* a = view->addAction(tabs_->tabText(i), this, [this, i] { tabs_->setCurrentIndex(i); });
    a->setShortcut(QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + i)));
  }
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About tilepath"), this, [this] {
    QMessageBox::about(this, tr("About tilepath"),
                       tr("tilepath explores FP8 KV-cache decode attention: tile paths, stage costs, the "
                          "steady-state initiation interval, overlap, and the K8/V8 break-even."));
  });
}

bool MainWindow::showView(const QString& name) {
  int i = viewNames().indexOf(name.toLower());
  if (i < 0) return false;
  tabs_->setCurrentIndex(i);
  return true;
}

QWidget* MainWindow::currentViewWidget() const { return views_.value(tabs_->currentIndex()); }

void MainWindow::showError(const QString& title, const QString& message) {
  last_error_ = message;
  showStatusMessage(message, 15000);
  if (!options_.interactiveErrors) return;
  // Non-modal so long work and tests are never blocked by the box.
  auto* box = new QMessageBox(QMessageBox::Critical, title, message, QMessageBox::Ok, this);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

bool MainWindow::openDatabase(const QString& path) {
  QString error;
  const bool opened =
      options_.loadInBackground ? session_->openInBackground(path, &error) : session_->open(path, &error);
  if (!opened) {
    showError(tr("Open database"), tr("Could not open %1:\n%2\n\nThe file was not changed.").arg(path, error));
    return false;
  }
  addRecentFile(session_->path());
  if (options_.restoreSettings) QSettings().setValue(QStringLiteral("lastDatabase"), session_->path());
  return true;
}

void MainWindow::openStartupDatabase(bool waitForDemo) {
  // The bundled H200 sweep, through the user's own copy so the shipped file never changes.
  QString copy_error;
  const QString bundled = workingCopyOfBundledDatabase(&copy_error);
  if (!bundled.isEmpty() && openDatabase(bundled)) return;
  if (!copy_error.isEmpty()) showStatusMessage(copy_error, 10000);
  const QString demo = demoDatabasePath();
  if (!openDatabase(demo)) return;
  session_->waitForLoad();
  if (!session_->cases().empty()) return;
  // A fresh demo database: fill it from the simulator and the CPU kernels so every view has data.
  showStatusMessage(tr("Creating a demo database with the sim and cpu backends…"), 10000);
  pending_demo_ = {{demoSimSweep(), QStringLiteral("sim")}, {demoCpuSweep(), QStringLiteral("cpu")}};
  startNextDemoSweep();
  if (waitForDemo) {
    while (run_panel_->controller()->isRunning() || !pending_demo_.empty())
      if (!run_panel_->controller()->wait(600000)) break;
    session_->reload();
  }
}

void MainWindow::startNextDemoSweep() {
  while (!pending_demo_.empty() && !run_panel_->controller()->isRunning()) {
    auto [spec, backend] = pending_demo_.front();
    pending_demo_.erase(pending_demo_.begin());
    if (run_panel_->startSweep(spec, backend, /*quiet=*/true)) return;
    showStatusMessage(tr("demo sweep on %1 skipped: %2").arg(backend, run_panel_->lastError()), 10000);
  }
}

int MainWindow::viewFills(const QString& name) const {
  const int i = viewNames().indexOf(name.toLower());
  return i < 0 ? 0 : view_fills_.value(views_.value(i), 0);
}

void MainWindow::fillView(QWidget* view) {
  if (!stale_views_.remove(view)) return;
  ++view_fills_[view];
  // A view over 100k cases takes a few hundred ms to build: say so while it does.
  std::optional<QString> busy;
  if (session_->cases().size() >= kManyCases) {
    busy = tr("Preparing %1 from %L2 cases…").arg(tabs_->tabText(views_.indexOf(view))).arg(session_->cases().size());
    loading_label_->setText(*busy);
    loading_label_->show();
    loading_bar_->show();
    statusBar()->repaint();
    QApplication::setOverrideCursor(Qt::WaitCursor);
  }
  struct EndBusy {
    MainWindow* window;
    bool active;
    ~EndBusy() {
      if (!active) return;
      QApplication::restoreOverrideCursor();
      window->loading_label_->hide();
      window->loading_bar_->hide();
    }
  } end_busy{this, busy.has_value()};
  if (view == runs_view_)
    runs_view_->reload();
  else if (view == charts_view_)
    charts_view_->setSharedCases(session_->sharedCases());
  else if (view == break_even_view_)
    // The list has no stage costs (DatabaseSession::listDetail): only the paired cases' are read.
    break_even_view_->setCases(session_->cases(), [session = session_](std::int64_t case_id) {
      return session->loadCase(case_id).stage_costs;
    });
  else if (view == dispatch_view_)
    dispatch_view_->setSharedCases(session_->sharedCases());
  else if (view == gate_view_) {
    // Only the cases run with decode steps have their gate.json read (their error against step).
    const analysis::GateJsonReader read_gate_json = [session = session_](std::int64_t case_id) {
      return analysis::gate_json_artifact(session->loadCase(case_id, /*withArtifacts=*/true));
    };
    if (gate_table_.valid() && gate_table_cases_ == session_->sharedCases())
      gate_view_->setTable(gate_table_.get(), read_gate_json);
    else
      gate_view_->setCases(session_->cases(), read_gate_json);
    gate_table_cases_.reset();
  }
}

void MainWindow::prebuildGateTable() {
  std::shared_ptr<const std::vector<CaseSummary>> cases = session_->sharedCases();
  if (!stale_views_.contains(gate_view_) || cases->size() < kManyCases) {
    gate_table_ = {};  // no table of an older list is held
    gate_table_cases_.reset();
    return;
  }
  // The list is shared read-only; a table of a list replaced meanwhile is not taken
  // (fillView compares the lists). Replacing the future waits for the build under way.
  gate_table_ = std::async(std::launch::async, [cases] { return analysis::build_gate_table(*cases); });
  gate_table_cases_ = std::move(cases);
}

void MainWindow::showStatusMessage(const QString& message, int timeoutMs) {
  status_message_->setFullText(message);
  if (timeoutMs > 0)
    status_timeout_->start(timeoutMs);
  else
    status_timeout_->stop();
}

void MainWindow::updateDatabaseLabel() {
  if (session_->isOpen()) {
    QString text = tr("Database: %1 — %2 runs, %3 cases").arg(session_->path()).arg(session_->runs().size());
    text = session_->isLoading() ? text.arg(tr("reading")) : text.arg(session_->cases().size());
    // Shown upgraded without touching the file; a run or a merge upgrades the file itself.
    if (session_->upgradedFromVersion() != 0)
      text += tr(" (schema %1, shown upgraded; a run or merge upgrades the file)").arg(session_->upgradedFromVersion());
    db_label_->setFullText(text);
  } else
    db_label_->setFullText(tr("No database open"));
}

void MainWindow::onDatabaseChanged() {
  // Views over the cases are filled when shown: a 100k-case database costs only the views
  // the user looks at.
  stale_views_ = {runs_view_, charts_view_, break_even_view_, dispatch_view_, gate_view_};
  fillView(currentViewWidget());
  prebuildGateTable();
  updateDatabaseLabel();
  // Prefer a stored case for the editor's variant; on first load pick a case with stage costs.
  if (!selected_case_ && !session_->cases().empty()) {
    const std::vector<CaseSummary>& cases = session_->cases();
    const CaseSummary* pick = nullptr;
    for (const char* backend : {"cuda", "hip", "sim", "cpu"}) {
      // The headline shape (OperatingPoint's defaults: K8/V8 transform/full, B=64, S=4096, HBM-cold) when
      // stored; otherwise the largest K8/V8 case with stage costs.
      if (auto headline = analysis::find_stored_case(cases, OperatingPoint{}, {backend, ""})) {
        selected_case_ = *headline;
        editor_->setOp(headline->record.op);
        return;  // setOp → updateAnalysis
      }
      for (const CaseSummary& c : cases)
        if (c.backend == backend && c.record.status == CaseStatus::ok && c.record.op.kv == KvDtype::k8v8 &&
            analysis::has_stage_costs(c) &&
            (!pick || c.record.op.batch * c.record.op.context > pick->record.op.batch * pick->record.op.context))
          pick = &c;
      if (pick) break;
    }
    if (pick) {
      selected_case_ = *pick;
      editor_->setOp(pick->record.op);
      return;  // setOp → updateAnalysis
    }
  }
  updateAnalysis();
}

void MainWindow::updateAnalysis() {
  const OperatingPoint op = editor_->op();
  if (!editor_->isValid()) {
    const std::vector<ValidationError> problems = op.problems();
    const QString reason = problems.empty() ? tr("see the editor's marked fields") : qs(problems.front().what());
    showStatusMessage(tr("operating point invalid: %1").arg(reason), 5000);
    graph_view_->setStale(reason);
    return;
  }
  std::optional<CaseSummary> measured;
  if (selected_case_ && analysis::measures(*selected_case_, op))
    measured = selected_case_;
  else
    measured = analysis::find_stored_case(session_->cases(), op);
  // The case list holds a few measurements of each case (DatabaseSession::listDetail):
  // the analysis reads the case whole.
  if (measured)
    if (CaseRecord whole = session_->loadCase(measured->case_id); whole.id != 0) measured->record = std::move(whole);
  try {
    analysis_ = analysis::analyze_variant(op, measured, ss(editor_->gpuModel()), timeline_view_->tiles());
  } catch (const std::exception& e) {
    showStatusMessage(tr("analysis failed: %1").arg(qs(e.what())), 10000);
    return;
  }
  graph_view_->setAnalysis(*analysis_);
  timeline_view_->setAnalysis(*analysis_);
}

void MainWindow::selectComparisonExample() {
  if (!selected_case_) return;
  // The selected case and its control: K16/V8 for an FP8-K case, else K16/V16.
  const KvDtype control = k_is_fp8(selected_case_->record.op.kv) ? KvDtype::k16v8 : KvDtype::k16v16;
  QList<qint64> ids{selected_case_->case_id};
  if (auto partner = analysis::fastest_control(session_->cases(), *selected_case_, control);
      partner && partner->case_id != selected_case_->case_id)
    ids << partner->case_id;
  runs_view_->selectCases(ids);
}

void MainWindow::addRecentFile(const QString& path) {
  if (!options_.restoreSettings) return;
  QSettings settings;
  QStringList recent = settings.value(kRecentKey).toStringList();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > kMaxRecent) recent.removeLast();
  settings.setValue(kRecentKey, recent);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  recent_menu_->clear();
  const QStringList recent = QSettings().value(kRecentKey).toStringList();
  for (const QString& path : recent) recent_menu_->addAction(path, this, [this, path] { openDatabase(path); });
  recent_menu_->setEnabled(!recent.isEmpty());
}

void MainWindow::openDialog() {
  QString path = QFileDialog::getOpenFileName(this, tr("Open run database"), QFileInfo(session_->path()).absolutePath(),
                                              tr("tilepath databases (*.sqlite *.db);;All files (*)"));
  if (!path.isEmpty()) openDatabase(path);
}

void MainWindow::reportMerge(const QString& what, const MergeResult& r) {
  showStatusMessage(tr("%1: %2 runs and %3 cases added, %4 already there")
                        .arg(what)
                        .arg(r.runs_added)
                        .arg(r.cases_added)
                        .arg(r.cases_present),
                    10000);
  if (r.conflicts.empty()) return;
  // A case both files hold with different results is never dropped silently.
  QStringList lines;
  for (const std::string& c : r.conflicts) lines << qs(c);
  showError(tr("Merge"), tr("%n case(s) differ between the files; the target's result is kept:\n", nullptr,
                            static_cast<int>(r.conflicts.size())) +
                             lines.join(QLatin1Char('\n')));
}

void MainWindow::mergeFromDialog() {
  if (!session_->isOpen()) return showError(tr("Merge"), tr("Open a database first."));
  QString other = QFileDialog::getOpenFileName(this, tr("Merge another database into this one"), QString(),
                                               tr("tilepath databases (*.sqlite *.db);;All files (*)"));
  if (other.isEmpty()) return;
  try {
    reportMerge(tr("merged %1").arg(other), session_->mergeFrom(other));
  } catch (const std::exception& e) {
    showError(tr("Merge"), qs(e.what()));
  }
}

void MainWindow::mergeIntoDialog() {
  if (!session_->isOpen()) return showError(tr("Merge"), tr("Open a database first."));
  QString target = QFileDialog::getSaveFileName(this, tr("Merge this database into (existing or new file)"),
                                                documentsPath(QString()), tr("tilepath databases (*.sqlite *.db)"),
                                                nullptr, QFileDialog::DontConfirmOverwrite);
  if (target.isEmpty()) return;
  try {
    RunStore out = RunStore::open(ss(target));
    reportMerge(tr("merged into %1").arg(target), out.merge_from(ss(session_->readPath())));
  } catch (const std::exception& e) {
    showError(tr("Merge"), qs(e.what()));
  }
}

void MainWindow::exportSubsetDialog() {
  if (!session_->isOpen()) return showError(tr("Export subset"), tr("Open a database first."));
  bool ok = false;
  QString text = QInputDialog::getText(this, tr("Export subset"),
                                       tr("Filter (key=value …; keys: run_id backend device kv k_path mode cache batch "
                                          "context head_dim status; empty = everything):"),
                                       QLineEdit::Normal, QString(), &ok);
  if (!ok) return;
  CaseFilter filter;
  try {
    filter = parseCaseFilter(text);
  } catch (const std::exception& e) {
    return showError(tr("Export subset"), qs(e.what()));
  }
  QString out = QFileDialog::getSaveFileName(this, tr("Export subset to a new database"), documentsPath(QString()),
                                             tr("tilepath databases (*.sqlite *.db)"));
  if (out.isEmpty()) return;
  try {
    session_->store()->export_subset(ss(out), filter);
    showStatusMessage(tr("exported to %1").arg(out), 10000);
  } catch (const std::exception& e) {
    showError(tr("Export subset"), qs(e.what()));
  }
}

void MainWindow::exportViewDialog() {
  QString path = QFileDialog::getSaveFileName(
      this, tr("Export view"), documentsPath(tabs_->tabText(tabs_->currentIndex()) + QStringLiteral(".png")),
      tr("PNG image (*.png);;SVG drawing (*.svg)"));
  if (path.isEmpty()) return;
  QString error;
  if (!exportWidget(*currentViewWidget(), path, &error)) showError(tr("Export view"), error);
}

void MainWindow::exportTableDialog() {
  const QAbstractItemModel* model = nullptr;
  QWidget* current = currentViewWidget();
  if (current == runs_view_)
    model = runs_view_->visibleCases();
  else if (current == backends_view_)
    model = backends_view_->model();
  else if (current == break_even_view_)
    model = break_even_view_->model();
  else if (current == dispatch_view_)
    model = dispatch_view_->model();
  else if (current == gate_view_)
    model = gate_view_->model();
  else if (current == charts_view_)
    model = charts_view_->latencyModel();
  else if (current == graph_view_ || current == timeline_view_)
    model = graph_view_->stageModel();
  if (!model) return showError(tr("Export table"), tr("This view has no table."));
  QString path =
      QFileDialog::getSaveFileName(this, tr("Export table as CSV"), documentsPath(QString()), tr("CSV (*.csv)"));
  if (path.isEmpty()) return;
  QString error;
  if (!writeModelCsv(*model, path, &error)) showError(tr("Export table"), error);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (run_panel_->controller()->isRunning()) {
    run_panel_->controller()->cancel();
    run_panel_->controller()->wait(30000);
  }
  if (options_.restoreSettings) {
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    settings.setValue(QStringLiteral("window/tab"), tabs_->currentIndex());
  }
  event->accept();
}

}  // namespace tilepath::ui
