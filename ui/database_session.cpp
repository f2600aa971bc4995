#include "ui/database_session.h"

#include <filesystem>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <QCoreApplication>
#include <QDir>
#include <QTemporaryDir>
#include <QThread>

#include "ui/qt_text.h"

namespace tilepath::ui {
namespace {

struct OpenedStore {
  std::unique_ptr<RunStore> store;
  std::unique_ptr<QTemporaryDir> copy_dir;
  int upgraded_from = 0;
};

// A read-only store of path: directly when its schema is read as it is
// (RunStore::oldest_schema_read_as_is() or later), else through an upgraded copy in a
// temporary folder, so the user's file is never written by looking.
OpenedStore open_for_reading(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec) || fs::file_size(path, ec) == 0) {
    RunStore::open(path);  // a new database: the one write an open makes, and only to create it
  }
  OpenedStore out;
  const int version = RunStore::file_schema_version(path);  // throws for foreign or corrupt files
  if (version >= RunStore::oldest_schema_read_as_is()) {
    out.store = std::make_unique<RunStore>(RunStore::open_read_only(path));
    return out;
  }
  out.copy_dir = std::make_unique<QTemporaryDir>(QDir::tempPath() + QStringLiteral("/tilepath-gui-XXXXXX"));
  if (!out.copy_dir->isValid())
    throw StoreError(path + ": schema version " + std::to_string(version) +
                     " needs an upgraded copy to be shown, and no temporary folder could be made");
  const std::string copy = ss(out.copy_dir->filePath(QStringLiteral("upgraded.sqlite")));
  fs::copy_file(path, copy, ec);
  if (ec) throw StoreError(path + ": cannot copy it to show it upgraded: " + ec.message());
  RunStore::open(copy);  // migrates the copy
  out.store = std::make_unique<RunStore>(RunStore::open_read_only(copy));
  out.upgraded_from = version;
  return out;
}

using CaseList = std::shared_ptr<const std::vector<CaseSummary>>;

CaseList emptyCases() {
  static const CaseList empty = std::make_shared<const std::vector<CaseSummary>>();
  return empty;
}

}  // namespace

DatabaseSession::DatabaseSession(QObject* parent) : QObject(parent), cases_(emptyCases()) {}
DatabaseSession::~DatabaseSession() { joinLoader(); }

CaseDetail DatabaseSession::listDetail() {
  CaseDetail d;
  // What the runs table, charts, break-even, dispatch and gate views read of a case
  // (the selected case's analysis reads it whole through loadCase).
  d.measurements = {"latency_us",         "latency_min_us",      "latency_max_us",
                    "tile_interval_us",   "floor_fraction",      "stream_same_bytes_fraction",
                    "tile_tokens",        "gate_rows_checked",   "gate_rows_total",
                    "gate_rel_l2_median", "gate_max_abs_median", "gate_kl_median",
                    "gate_top8_median",   "gate_top32_median"};
  // Held as values by name: 14 numbers of 100k cases, not 1.4 M rows with a name and unit each.
  d.measurement_values_only = true;
  // The break-even view reads the stage costs of the cases it pairs; the list says which have them.
  d.stage_costs = false;
  d.stage_cost_flags = true;
  // The kernel check's rel_l2 (the runs table) and the gate's metrics (gate, dispatch, runs).
  d.quality_metrics = std::vector<std::string>{"kernel_check_rel_l2", "rel_l2", "max_abs", "kl", "top8", "top32"};
  d.case_texts = false;   // the status tooltip and the comparison pane read them with the case
  d.predictions = false;  // the comparison pane reads them with the whole case
  d.artifact_names = std::vector<std::string>{"gate.json"};  // the gate view's "has gate.json"
  return d;
}

bool DatabaseSession::open(const QString& path, QString* error) {
  if (!openStore(path, true, error)) return false;
  background_ = false;
  return true;
}

bool DatabaseSession::openInBackground(const QString& path, QString* error) {
  if (!openStore(path, false, error)) return false;
  background_ = true;
  startLoad();
  return true;
}

bool DatabaseSession::openStore(const QString& path, bool loadCases, QString* error) {
  try {
    OpenedStore opened = open_for_reading(ss(path));
    std::vector<RunInfo> runs = opened.store->runs();
    CaseList cases = loadCases ? std::make_shared<const std::vector<CaseSummary>>(opened.store->cases({}, listDetail()))
                               : emptyCases();
    ++load_generation_;  // a load of the previous file still running is dropped
    loading_ = false;
    store_ = std::move(opened.store);
    copy_dir_ = std::move(opened.copy_dir);
    upgraded_from_ = opened.upgraded_from;
    path_ = path;
    runs_ = std::move(runs);
    cases_ = std::move(cases);
  } catch (const std::exception& e) {
    if (error) *error = qs(e.what());
    return false;
  }
  emit opened(path);
  emit changed();
  return true;
}

void DatabaseSession::joinLoader() {
  if (loader_.joinable()) loader_.join();
}

void DatabaseSession::startLoad() {
  if (loading_ && loader_.joinable()) {
    // Without waiting for it here: a sweep into a large file reloads after every case.
    load_again_ = true;
    return;
  }
  joinLoader();
  load_again_ = false;
  loading_ = true;
  const unsigned generation = ++load_generation_;
  const std::string read_path = store_->path();
  emit loadingStarted(path_);
  loader_ = std::thread([this, generation, read_path] {
    // A connection of its own: SQLite connections are not shared across threads.
    CaseList cases = emptyCases();
    try {
      cases =
          std::make_shared<const std::vector<CaseSummary>>(RunStore::open_read_only(read_path).cases({}, listDetail()));
    } catch (const std::exception&) {
      // Shown as an empty list; reload() tries again.
    }
    QMetaObject::invokeMethod(
        this,
        [this, generation, cases] {
          if (generation != load_generation_) return;
          cases_ = cases;
          loading_ = false;
          if (load_again_) startLoad();
          if (!loading_) emit loadingFinished();
          emit changed();
        },
        Qt::QueuedConnection);
#ifdef __GLIBC__
    // The load's threads leave freed buffers (their connections' page caches, rows read
    // and dropped) in malloc arenas the GUI thread never allocates from: hand the pages
    // back here, beside the views filling on the GUI thread rather than before them.
    malloc_trim(0);
#endif
  });
}

void DatabaseSession::waitForLoad() {
  while (loading_) {
    QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
    if (loading_) QThread::msleep(5);
  }
}

void DatabaseSession::close() {
  ++load_generation_;
  loading_ = false;
  store_.reset();
  copy_dir_.reset();
  path_.clear();
  upgraded_from_ = 0;
  runs_.clear();
  cases_ = emptyCases();
  emit closed();
  emit changed();
}

QString DatabaseSession::readPath() const { return store_ ? qs(store_->path()) : QString(); }

CaseRecord DatabaseSession::loadCase(std::int64_t caseId, bool withArtifacts) const {
  if (!store_) return {};
  try {
    return store_->load_case(caseId, withArtifacts);
  } catch (const std::exception&) {
    return {};
  }
}

MergeResult DatabaseSession::mergeFrom(const QString& other) {
  MergeResult result;
  {
    RunStore writer = RunStore::open(ss(path_));
    result = writer.merge_from(ss(other));
  }
  reload();
  return result;
}

void DatabaseSession::reopenDirectly() {
  try {
    if (RunStore::file_schema_version(ss(path_)) < RunStore::oldest_schema_read_as_is()) return;
    store_ = std::make_unique<RunStore>(RunStore::open_read_only(ss(path_)));
    copy_dir_.reset();
    upgraded_from_ = 0;
  } catch (const std::exception&) {
    // Keep showing the copy; the next reload tries again.
  }
}

void DatabaseSession::reload() {
  if (!store_) return;
  // A new connection: one opened on a WAL-mode file at rest reads it as immutable
  // (RunStore::open_read_only) and would not see what a writer added since.
  if (upgraded_from_ != 0)
    reopenDirectly();
  else
    try {
      store_ = std::make_unique<RunStore>(RunStore::open_read_only(ss(path_)));
    } catch (const std::exception&) {
      // Keep the connection there is; the next reload tries again.
    }
  try {
    runs_ = store_->runs();
  } catch (const std::exception&) {
    // A read failure leaves the previous snapshot; the next reload retries.
  }
  if (loading_ || background_) {
    startLoad();  // a load under way may predate what changed: one more follows it
    emit changed();
    return;
  }
  try {
    cases_ = std::make_shared<const std::vector<CaseSummary>>(store_->cases({}, listDetail()));
  } catch (const std::exception&) {
  }
  emit changed();
}

}  // namespace tilepath::ui
