#pragma once
// The open run database of the GUI: one read-only RunStore on the GUI thread plus
// cached runs and case summaries that the models read. Looking never writes: the file
// stays byte-identical while it is browsed, and read-only files and folders open. A
// file of a schema older than RunStore::oldest_schema_read_as_is() is shown through an
// upgraded copy in a temporary folder; writing (a run, Merge from…) goes through a
// read-write connection of its own, which upgrades the file then. Workers open their own connection to the same file
// (SQLite connections are not shared across threads).

#include <memory>
#include <thread>
#include <vector>

#include <QObject>
#include <QString>

#include "core/store/run_store.h"

class QTemporaryDir;

namespace tilepath::ui {

class DatabaseSession : public QObject {
  Q_OBJECT
 public:
  explicit DatabaseSession(QObject* parent = nullptr);
  ~DatabaseSession() override;

  // Opens path read-only (a missing or empty file is created as a new database first).
  // On failure keeps the previous database, returns false and fills *error with the
  // store's one-line reason.
  bool open(const QString& path, QString* error = nullptr);
  // As open(), but the cases are read on a thread of their own (its own read-only
  // connection): the file is checked and its runs read before this returns, and
  // loadingFinished() follows with the cases (changed() too). Meanwhile cases() is empty
  // and isLoading() true. For the window: a 100k-case file takes seconds to list.
  bool openInBackground(const QString& path, QString* error = nullptr);
  bool isLoading() const { return loading_; }
  // Blocks (processing events) until a background load has finished.
  void waitForLoad();
  void close();
  bool isOpen() const { return store_ != nullptr; }
  // The user's file: what runs write into and what the window names.
  QString path() const { return path_; }
  // The file the store reads: path(), or the upgraded copy of an older schema.
  QString readPath() const;
  // The schema version of path() when it is shown through an upgraded copy; 0 otherwise.
  int upgradedFromVersion() const { return upgraded_from_; }

  const RunStore* store() const { return store_.get(); }
  const std::vector<RunInfo>& runs() const { return runs_; }
  const std::vector<CaseSummary>& cases() const { return *cases_; }
  // The same list, shared: models keep it without a copy of 100k cases.
  std::shared_ptr<const std::vector<CaseSummary>> sharedCases() const { return cases_; }
  // What the case list holds of each case: the measurements the views read, no
  // prediction details; loadCase() reads one case whole.
  static CaseDetail listDetail();
  // Full record with artifacts, or nullopt-like empty record (id 0) if not found.
  CaseRecord loadCase(std::int64_t caseId, bool withArtifacts = false) const;

  // Merges another database into path() through a read-write connection of its own
  // (upgrading path() if its schema is older), then reloads. Throws StoreError.
  MergeResult mergeFrom(const QString& other);

 public slots:
  // Re-reads runs and cases (after a worker stored new cases, a merge, ...). A file shown
  // through an upgraded copy is read directly again once a writer has upgraded it. After
  // openInBackground the cases are read on the thread again (a sweep into a large file
  // reloads after every case).
  void reload();

 signals:
  void opened(const QString& path);
  void changed();  // runs/cases reloaded
  void closed();
  void loadingStarted(const QString& path);
  void loadingFinished();

 private:
  std::unique_ptr<RunStore> store_;
  std::unique_ptr<QTemporaryDir> copy_dir_;  // holds the upgraded copy, if any
  QString path_;
  int upgraded_from_ = 0;
  std::vector<RunInfo> runs_;
  std::shared_ptr<const std::vector<CaseSummary>> cases_;
  bool loading_ = false;
  bool background_ = false;       // opened by openInBackground: reloads read on the thread too
  bool load_again_ = false;       // a reload asked for while a load ran: one more when it ends
  unsigned load_generation_ = 0;  // a finished load of an older open is dropped
  std::thread loader_;

  void reopenDirectly();  // path() is current now: read it instead of the copy
  bool openStore(const QString& path, bool loadCases, QString* error);
  void startLoad();
  void joinLoader();
};

}  // namespace tilepath::ui
