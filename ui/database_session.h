#pragma once
// The open run database of the GUI: one read-only RunStore on the GUI thread plus
// cached runs and case summaries that the models read. Looking never writes: the file
// stays byte-identical while it is browsed, and read-only files and folders open. A
// file of a schema older than RunStore::oldest_schema_read_as_is() is shown through an
// upgraded copy in a temporary folder; writing (a run, Merge from…) goes through a
// read-write connection of its own, which upgrades the file then. Workers open their own connection to the same file
// (SQLite connections are not shared across threads).

#include <memory>
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
  const std::vector<CaseSummary>& cases() const { return cases_; }
  // Full record with artifacts, or nullopt-like empty record (id 0) if not found.
  CaseRecord loadCase(std::int64_t caseId, bool withArtifacts = false) const;

  // Merges another database into path() through a read-write connection of its own
  // (upgrading path() if its schema is older), then reloads. Throws StoreError.
  MergeResult mergeFrom(const QString& other);

 public slots:
  // Re-reads runs and cases (after a worker stored new cases, a merge, ...). A file shown
  // through an upgraded copy is read directly again once a writer has upgraded it.
  void reload();

 signals:
  void opened(const QString& path);
  void changed();  // runs/cases reloaded
  void closed();

 private:
  std::unique_ptr<RunStore> store_;
  std::unique_ptr<QTemporaryDir> copy_dir_;  // holds the upgraded copy, if any
  QString path_;
  int upgraded_from_ = 0;
  std::vector<RunInfo> runs_;
  std::vector<CaseSummary> cases_;

  void reopenDirectly();  // path() is current now: read it instead of the copy
};

}  // namespace tilepath::ui
