#include "core/store/claim_heartbeat.h"

#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "core/store/run_store.h"
#include "core/store/sqlite_util.h"

namespace tilepath::store {
namespace {

std::atomic<std::int64_t> g_interval_ms{static_cast<std::int64_t>(RunStore::kClaimHeartbeatIntervalSeconds * 1000)};

double unix_seconds_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The connection opens the same file whatever the process's working folder is later.
std::string absolute_path(const std::string& path) {
  if (path.rfind("file:", 0) == 0) return path;  // an SQLite URI
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  return ec ? path : absolute.string();
}

}  // namespace

std::chrono::milliseconds claim_heartbeat_interval() { return std::chrono::milliseconds(g_interval_ms.load()); }

void set_claim_heartbeat_interval(std::chrono::milliseconds interval) {
  g_interval_ms.store(std::max<std::int64_t>(1, interval.count()));
}

ClaimHeartbeat::ClaimHeartbeat(std::string path, std::string host, std::int64_t pid,
                               std::chrono::milliseconds lock_wait)
    : path_(absolute_path(path)), host_(std::move(host)), pid_(pid), lock_wait_(lock_wait) {
  // The thread takes none of the process's signals: they stay with the threads that
  // handle them (a sweep's SIGINT, a worker's SIGPIPE on its own writes).
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  try {
    thread_ = std::thread(&ClaimHeartbeat::loop, this);
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

ClaimHeartbeat::~ClaimHeartbeat() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ClaimHeartbeat::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, claim_heartbeat_interval(), [this] { return stop_.load(); })) {
    lock.unlock();
    refresh();
    lock.lock();
  }
  lock.unlock();
  if (db_ != nullptr) sqlite3_close_v2(db_);
  db_ = nullptr;
}

// Waits for a lock as long as any writer (RunStore::set_lock_wait), unless stopped.
int ClaimHeartbeat::busy_handler(void* self, int attempts) {
  const auto* heartbeat = static_cast<const ClaimHeartbeat*>(self);
  constexpr std::chrono::milliseconds kStep{10};
  if (heartbeat->stop_.load() || attempts * kStep >= heartbeat->lock_wait_) return 0;
  std::this_thread::sleep_for(kStep);
  return 1;
}

// A failed refresh (the file locked past the lock wait, gone, unwritable) is not an error
// of the sweep: the claims stay, and the next beat tries again. Only a heartbeat older than
// RunStore::kClaimHeartbeatTimeoutSeconds lets another host take them over.
void ClaimHeartbeat::refresh() {
  try {
    if (db_ == nullptr) {
      sqlite3* raw = nullptr;
      const int rc = sqlite3_open_v2(path_.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI, nullptr);
      if (rc != SQLITE_OK) {
        sqlite3_close_v2(raw);
        return;
      }
      sqlite3_extended_result_codes(raw, 1);
      sqlite3_busy_handler(raw, &ClaimHeartbeat::busy_handler, this);
      db_ = raw;
    }
    {
      // Holding none (all stored meanwhile): no write lock is taken.
      Statement held(db_, path_, "SELECT 1 FROM claims WHERE host = ? AND pid = ? LIMIT 1");
      held.bind(1, host_).bind(2, pid_);
      if (!held.step()) return;
    }
    Statement beat(db_, path_, "UPDATE claims SET heartbeat_at = ? WHERE host = ? AND pid = ?");
    beat.bind(1, unix_seconds_now()).bind(2, host_).bind(3, pid_).run();
    beats_.fetch_add(1);
  } catch (const StoreError&) {
    // Retried at the next beat (see above).
  }
}

}  // namespace tilepath::store
