#include "ui/database_session.h"

#include "ui/qt_text.h"

namespace tilepath::ui {

DatabaseSession::DatabaseSession(QObject* parent) : QObject(parent) {}
DatabaseSession::~DatabaseSession() = default;

bool DatabaseSession::open(const QString& path, QString* error) {
  try {
    auto store = std::make_unique<RunStore>(RunStore::open(ss(path)));
    std::vector<RunInfo> runs = store->runs();
    std::vector<CaseSummary> cases = store->cases();
    store_ = std::move(store);
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
  runs_.clear();
  cases_.clear();
  emit closed();
  emit changed();
}

QString DatabaseSession::path() const { return store_ ? qs(store_->path()) : QString(); }

CaseRecord DatabaseSession::loadCase(std::int64_t caseId, bool withArtifacts) const {
  if (!store_) return {};
  try {
    return store_->load_case(caseId, withArtifacts);
  } catch (const std::exception&) {
    return {};
  }
}

void DatabaseSession::reload() {
  if (!store_) return;
  try {
    runs_ = store_->runs();
    cases_ = store_->cases();
  } catch (const std::exception&) {
    // A read failure leaves the previous snapshot; the next reload retries.
  }
  emit changed();
}

}  // namespace tilepath::ui
