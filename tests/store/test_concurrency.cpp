// Another process holding the write lock, and a process killed while writing:
// the store reports the lock and never loses or half-writes a case.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "core/store/run_store.h"
#include "tests/store/store_test_util.h"

namespace tilepath {
namespace {

using namespace store_test;

// A pipe the parent and a forked child use to hand over small integers.
struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() { EXPECT_EQ(::pipe(fd), 0); }
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
  void close_read() { ::close(fd[0]), fd[0] = -1; }
  void close_write() { ::close(fd[1]), fd[1] = -1; }
  bool send(int v) { return ::write(fd[1], &v, sizeof v) == static_cast<ssize_t>(sizeof v); }
  bool receive(int& v) {
    std::size_t got = 0;
    auto* p = reinterpret_cast<char*>(&v);
    while (got < sizeof v) {
      const ssize_t n = ::read(fd[0], p + got, sizeof v - got);
      if (n <= 0) return false;
      got += static_cast<std::size_t>(n);
    }
    return true;
  }
};

TEST(Concurrency, LockedByAnotherProcessIsReportedAndLosesNothing) {
  TempDir tmp;
  const std::string path = tmp.file("locked.sqlite");
  std::int64_t run_id = 0;
  {
    RunStore store = RunStore::open(path);
    RunInfo run = sample_run();
    run_id = store.begin_run(run);
    CaseRecord first = sample_case(0);
    store.add_case(run_id, first);
  }

  Pipe to_parent, to_child;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Child: its own connection, hold the write lock until told to let go.
    to_parent.close_read();
    to_child.close_write();
    int status = 1;
    try {
      RunStore store = RunStore::open(path);
      if (sqlite3_exec(store.handle(), "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr) == SQLITE_OK) {
        to_parent.send(1);
        int go = 0;
        to_child.receive(go);
        sqlite3_exec(store.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
        status = 0;
      } else {
        to_parent.send(0);
      }
    } catch (...) {
      to_parent.send(0);
    }
    ::_exit(status);
  }
  to_parent.close_write();
  to_child.close_read();
  int locked = 0;
  ASSERT_TRUE(to_parent.receive(locked));
  ASSERT_EQ(locked, 1) << "child could not take the lock";

  RunStore::set_lock_wait(std::chrono::milliseconds(300));  // the default waits 30 s
  RunStore store = RunStore::open(path);                    // reading is not blocked in WAL mode
  EXPECT_EQ(store.case_count(), 1);
  CaseRecord second = sample_case(1);
  try {
    store.add_case(run_id, second);
    ADD_FAILURE() << "add_case succeeded while another process held the lock";
  } catch (const StoreError& e) {
    EXPECT_EQ(std::string(e.what()), path + " is locked by another process");
  }
  EXPECT_EQ(second.id, 0) << "a refused case must not get an id";

  to_child.send(1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  RunStore::set_lock_wait(std::chrono::milliseconds(RunStore::kDefaultLockWaitMs));
  // Nothing lost, and the same case goes in once the lock is gone.
  EXPECT_EQ(store.case_count(), 1);
  store.add_case(run_id, second);
  EXPECT_EQ(store.case_count(), 2);
  expect_same_case(sample_case(1), store.load_case(second.id, true), true);
}

// A writer waits for a lock another process holds for a while (a merge, an upgrade)
// instead of failing: an exclusive lock held 2 s, and a rollback-journal writer's RESERVED
// lock that kept the switch to WAL from waiting at all.
TEST(Concurrency, AWriterWaitsOutALockHeldForSeconds) {
  for (const char* lock : {"BEGIN EXCLUSIVE", "BEGIN IMMEDIATE"}) {
    TempDir tmp;
    const std::string path = tmp.file("wait.sqlite");
    std::int64_t run_id = 0;
    {
      RunStore store = RunStore::open(path);
      RunInfo run = sample_run();
      run_id = store.begin_run(run);
    }  // closed: back in rollback-journal mode, as at rest
    Pipe to_parent;
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      to_parent.close_read();
      sqlite3* db = nullptr;
      int ok = sqlite3_open(path.c_str(), &db) == SQLITE_OK && sqlite3_exec(db, lock, nullptr, nullptr, nullptr) == 0;
      to_parent.send(ok);
      ::usleep(2000 * 1000);
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      sqlite3_close(db);
      ::_exit(0);
    }
    to_parent.close_write();
    int locked = 0;
    ASSERT_TRUE(to_parent.receive(locked));
    ASSERT_EQ(locked, 1) << lock;
    const auto start = std::chrono::steady_clock::now();
    {
      RunStore store = RunStore::open(path);
      CaseRecord rec = sample_case(3);
      store.add_case(run_id, rec);
      EXPECT_EQ(store.case_count(), 1) << lock;
    }
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_GT(waited, 1.0) << lock << ": it did not wait for the lock";
    ::waitpid(child, nullptr, 0);
  }
}

// A file without the read indexes gets them when a writer opens it. The count of the indexes
// must be read to its end before the write lock is asked for: SQLite does not wait for a lock
// that a connection in the middle of a read asks for (it could deadlock), so with another
// process writing, the open would fail at once with "locked by another process" instead of
// waiting: what two sweeps started together on one new file run into.
TEST(Concurrency, OpeningAFileWithoutTheReadIndexesWaitsForAWriter) {
  TempDir tmp;
  const std::string path = tmp.file("indexes.sqlite");
  { RunStore store = RunStore::open(path); }
  Pipe to_parent;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Child: open in WAL mode, drop the indexes, then hold the write lock for a second.
    to_parent.close_read();
    int ok = 0;
    try {
      RunStore store = RunStore::open(path);
      ok = sqlite3_exec(store.handle(),
                        "DROP INDEX measurements_by_name; DROP INDEX artifacts_listing; "
                        "DROP INDEX predictions_listing; BEGIN IMMEDIATE",
                        nullptr, nullptr, nullptr) == SQLITE_OK;
      to_parent.send(ok);
      ::usleep(1000 * 1000);
      sqlite3_exec(store.handle(), "COMMIT", nullptr, nullptr, nullptr);
    } catch (...) {
      to_parent.send(0);
    }
    ::_exit(ok ? 0 : 1);
  }
  to_parent.close_write();
  int locked = 0;
  ASSERT_TRUE(to_parent.receive(locked));
  ASSERT_EQ(locked, 1) << "child could not drop the indexes and take the lock";
  const auto start = std::chrono::steady_clock::now();
  {
    RunStore store = RunStore::open(path);
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_GT(waited, 0.5) << "it did not wait for the writer";
    sqlite3_stmt* q = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(store.handle(),
                                 "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN "
                                 "('measurements_by_name', 'artifacts_listing', 'predictions_listing')",
                                 -1, &q, nullptr),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(q, 0), 3) << "the open did not create the read indexes";
    sqlite3_finalize(q);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// The child writes cases as fast as it can, each with a large artifact so that
// a kill is likely to land inside a transaction, and reports each commit.
TEST(Concurrency, KilledWriterLosesAtMostTheCaseInFlight) {
  TempDir tmp;
  const std::string path = tmp.file("crash.sqlite");
  std::int64_t run_id = 0;
  {
    RunStore store = RunStore::open(path);
    RunInfo run = sample_run();
    run_id = store.begin_run(run);
  }
  auto make_case = [](int i) {
    CaseRecord rec = sample_case(i);
    rec.artifacts.push_back({"profile.bin", "application/octet-stream",
                             std::vector<std::uint8_t>(256 * 1024, static_cast<std::uint8_t>(i))});
    return rec;
  };

  Pipe committed;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    committed.close_read();
    try {
      RunStore store = RunStore::open(path);
      for (int i = 0;; ++i) {
        CaseRecord rec = make_case(i);
        store.add_case(run_id, rec);
        committed.send(i);
      }
    } catch (...) {
    }
    ::_exit(1);
  }
  committed.close_write();
  int last_committed = -1, value = 0;
  while (last_committed < 8 && committed.receive(value)) last_committed = value;
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child ended on its own";
  // Commits reported after we stopped reading still count as committed.
  while (committed.receive(value)) last_committed = value;

  RunStore store = RunStore::open(path);
  const std::int64_t count = store.case_count();
  EXPECT_GE(count, last_committed + 1) << "a committed case was lost";
  EXPECT_LE(count, last_committed + 2) << "more cases than the child could have committed";
  const auto rows = store.cases();
  ASSERT_EQ(static_cast<std::int64_t>(rows.size()), count);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    // Cases are committed in order 0, 1, 2, ... and each is complete.
    const CaseRecord expected = make_case(static_cast<int>(i));
    expect_same_case(expected, store.load_case(rows[i].case_id, true), true);
  }
  // No child rows without their case.
  for (const char* t : {"measurements", "stage_costs", "predictions", "quality", "artifacts"}) {
    sqlite3_stmt* st = nullptr;
    const std::string sql = std::string("SELECT count(*) FROM ") + t + " WHERE case_id NOT IN (SELECT id FROM cases)";
    ASSERT_EQ(sqlite3_prepare_v2(store.handle(), sql.c_str(), -1, &st, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(st, 0), 0) << t;
    sqlite3_finalize(st);
  }
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(store.handle(), "PRAGMA integrity_check", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "ok");
  sqlite3_finalize(st);
}

}  // namespace
}  // namespace tilepath
