#include "ui/database_session.h"

#include <filesystem>

#include <QDir>
#include <QTemporaryDir>

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

}  // namespace

DatabaseSession::DatabaseSession(QObject* parent) : QObject(parent) {}
DatabaseSession::~DatabaseSession() = default;

bool DatabaseSession::open(const QString& path, QString* error) {
  try {
    OpenedStore opened = open_for_reading(ss(path));
    std::vector<RunInfo> runs = opened.store->runs();
    std::vector<CaseSummary> cases = opened.store->cases();
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

void DatabaseSession::close() {
  store_.reset();
  copy_dir_.reset();
  path_.clear();
  upgraded_from_ = 0;
  runs_.clear();
  cases_.clear();
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
  if (upgraded_from_ != 0) reopenDirectly();
  try {
    runs_ = store_->runs();
    cases_ = store_->cases();
  } catch (const std::exception&) {
    // A read failure leaves the previous snapshot; the next reload retries.
  }
  emit changed();
}

}  // namespace tilepath::ui
