#pragma once
// The heartbeat of a process's claims (RunStore::claim_case, docs/schema.md "claims"): a
// thread that, every claim_heartbeat_interval(), sets claims.heartbeat_at of every claim
// that this host and PID hold in one file, so that sweeps on other hosts can tell a live
// owner from a dead one long before its cases would otherwise be given up.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

struct sqlite3;

namespace tilepath::store {

// How often a heartbeat refreshes (RunStore::kClaimHeartbeatIntervalSeconds unless a test
// shortened it); read before every wait, so a change applies from the next one.
std::chrono::milliseconds claim_heartbeat_interval();
void set_claim_heartbeat_interval(std::chrono::milliseconds interval);

class ClaimHeartbeat {
 public:
  // Starts the thread; it opens its own connection to path on its first refresh (a
  // connection belongs to one thread) and waits up to lock_wait for the write lock, as
  // any writer does. Throws std::system_error when no thread can be started.
  ClaimHeartbeat(std::string path, std::string host, std::int64_t pid, std::chrono::milliseconds lock_wait);
  ClaimHeartbeat(const ClaimHeartbeat&) = delete;
  ClaimHeartbeat& operator=(const ClaimHeartbeat&) = delete;
  // Stops the thread (a refresh waiting for a lock gives up at once) and closes its connection.
  ~ClaimHeartbeat();

  // The process whose claims it refreshes. After fork() the child has the object but not
  // the thread: it must never be destroyed there (RunStore leaves it alone).
  std::int64_t pid() const { return pid_; }
  // Refreshes that wrote (tests); a refresh that fails is retried at the next beat.
  int beats() const { return beats_.load(); }

 private:
  void loop();
  void refresh();
  static int busy_handler(void* self, int attempts);

  const std::string path_, host_;
  const std::int64_t pid_;
  const std::chrono::milliseconds lock_wait_;
  sqlite3* db_ = nullptr;  // owned by the thread
  std::atomic<bool> stop_{false};
  std::atomic<int> beats_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace tilepath::store
