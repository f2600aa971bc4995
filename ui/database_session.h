#pragma once
// The open run database of the GUI: one RunStore on the GUI thread plus cached
// runs and case summaries that the models read. Workers open their own
// connection to the same file (SQLite connections are not shared across threads).

#include <memory>
#include <vector>

#include <QObject>
#include <QString>

#include "core/store/run_store.h"

namespace tilepath::ui {

class DatabaseSession : public QObject {
  Q_OBJECT
 public:
  explicit DatabaseSession(QObject* parent = nullptr);
  ~DatabaseSession() override;

  // Opens (creating/migrating) path. On failure keeps the previous database,
  // returns false and fills *error with the store's one-line reason.
  bool open(const QString& path, QString* error = nullptr);
  void close();
  bool isOpen() const { return store_ != nullptr; }
  QString path() const;

  RunStore* store() { return store_.get(); }
  const std::vector<RunInfo>& runs() const { return runs_; }
  const std::vector<CaseSummary>& cases() const { return cases_; }
  // Full record with artifacts, or nullopt-like empty record (id 0) if not found.
  CaseRecord loadCase(std::int64_t caseId, bool withArtifacts = false) const;

 public slots:
  // Re-reads runs and cases (after a worker stored new cases, a merge, ...).
  void reload();

 signals:
  void opened(const QString& path);
  void changed();  // runs/cases reloaded
  void closed();

 private:
  std::unique_ptr<RunStore> store_;
  std::vector<RunInfo> runs_;
  std::vector<CaseSummary> cases_;
};

}  // namespace tilepath::ui
