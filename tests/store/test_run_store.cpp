// Writing and reading runs and cases: every CaseRecord field round-trips,
// filters select the right cases, has_case sees across runs.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <thread>

#include "core/store/run_store.h"
#include "tests/store/store_test_util.h"

namespace tilepath {
namespace {

using namespace store_test;

TEST(RunStore, NewFileIsCreatedAtCurrentSchemaInWalMode) {
  TempDir tmp;
  RunStore store = RunStore::open(tmp.file("new.sqlite"));
  EXPECT_EQ(store.schema_version(), RunStore::current_schema_version());
  EXPECT_GE(RunStore::current_schema_version(), 2);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(store.handle(), "PRAGMA journal_mode", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "wal");
  sqlite3_finalize(st);
  ASSERT_EQ(sqlite3_prepare_v2(store.handle(), "PRAGMA foreign_keys", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 1);
  sqlite3_finalize(st);
  EXPECT_EQ(store.case_count(), 0);
  EXPECT_TRUE(store.runs().empty());
}

TEST(RunStore, BeginRunFillsUuidV4AndStartTime) {
  TempDir tmp;
  RunStore store = RunStore::open(tmp.file("s.sqlite"));
  RunInfo a = sample_run(), b = sample_run();
  const auto id_a = store.begin_run(a);
  const auto id_b = store.begin_run(b);
  EXPECT_NE(id_a, id_b);
  EXPECT_EQ(a.id, id_a);
  const std::regex uuid_v4("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  EXPECT_TRUE(std::regex_match(a.uuid, uuid_v4)) << a.uuid;
  EXPECT_NE(a.uuid, b.uuid);
  EXPECT_TRUE(std::regex_match(a.started_at, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)"))) << a.started_at;

  auto stored = store.run(id_a);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->uuid, a.uuid);
  EXPECT_EQ(stored->started_at, a.started_at);
  EXPECT_EQ(stored->tool_version, "0.1.0");
  EXPECT_EQ(stored->git_revision, "abc1234");
  EXPECT_EQ(stored->host, "testhost");
  EXPECT_EQ(stored->backend, "cpu");
  EXPECT_EQ(stored->backend_version, "1.2");
  EXPECT_EQ(stored->device, "cpu0");
  EXPECT_EQ(stored->command, "tilepath sweep spec.json");
  EXPECT_EQ(stored->notes, "unit test");
  EXPECT_TRUE(stored->finished_at.empty());

  store.finish_run(id_a);
  EXPECT_FALSE(store.run(id_a)->finished_at.empty());
  EXPECT_TRUE(store.run(id_b)->finished_at.empty());
  EXPECT_THROW(store.finish_run(9999), StoreError);
  EXPECT_FALSE(store.run(9999).has_value());
  ASSERT_EQ(store.runs().size(), 2u);
  EXPECT_EQ(store.runs()[1].uuid, b.uuid);

  RunInfo dup = sample_run();
  dup.uuid = a.uuid;
  EXPECT_THROW(store.begin_run(dup), StoreError);
}

// run_case_counts: every run the run terms admit, with its cases counted by status; case terms
// count only their cases and drop the runs that hold none.
TEST(RunStore, RunCaseCountsAreByStatusForTheRunsTheFilterAdmits) {
  TempDir tmp;
  RunStore store = RunStore::open(tmp.file("runs.sqlite"));
  RunInfo cpu = sample_run("cpu", "cpu0"), cuda = sample_run("cuda", "H200"), empty = sample_run("cuda", "H200");
  store.begin_run(cpu);
  store.begin_run(cuda);
  store.begin_run(empty);
  for (int i = 0; i < 3; ++i) {
    CaseRecord c = sample_case(i);
    if (i == 2) {
      c.status = CaseStatus::failed;
      c.op.kv = KvDtype::k16v16;
      c.op.k_path = KPath::k16;
      c.op.mode = TransformMode::none;
    }
    store.add_case(cpu.id, c);
  }
  CaseRecord unsupported = sample_case(7);
  unsupported.status = CaseStatus::unsupported;
  store.add_case(cuda.id, unsupported);

  const auto by_status = [](const RunCaseCounts& s, CaseStatus status) {
    return s.cases_by_status[static_cast<std::size_t>(status)];
  };
  const std::vector<RunCaseCounts> all = store.run_case_counts();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].run.uuid, cpu.uuid);
  EXPECT_EQ(all[0].cases(), 3);
  EXPECT_EQ(by_status(all[0], CaseStatus::ok), 2);
  EXPECT_EQ(by_status(all[0], CaseStatus::failed), 1);
  EXPECT_EQ(by_status(all[1], CaseStatus::unsupported), 1);
  EXPECT_EQ(all[1].cases(), 1);
  EXPECT_EQ(all[2].run.uuid, empty.uuid);
  EXPECT_EQ(all[2].cases(), 0) << "a run without cases is listed when no case term asks";
  EXPECT_EQ(all[2].run.notes, empty.notes);

  CaseFilter backend;
  backend.backend = "cuda";
  const auto cuda_runs = store.run_case_counts(backend);
  ASSERT_EQ(cuda_runs.size(), 2u);
  EXPECT_EQ(cuda_runs[0].run.uuid, cuda.uuid);

  CaseFilter k16v16;
  k16v16.kv = "k16v16";
  const auto with_k16v16 = store.run_case_counts(k16v16);
  ASSERT_EQ(with_k16v16.size(), 1u) << "case terms drop the runs with no such case";
  EXPECT_EQ(with_k16v16[0].run.uuid, cpu.uuid);
  EXPECT_EQ(with_k16v16[0].cases(), 1);
  EXPECT_EQ(by_status(with_k16v16[0], CaseStatus::failed), 1);
}

TEST(RunStore, EveryCaseFieldRoundTrips) {
  TempDir tmp;
  const std::string path = tmp.file("s.sqlite");
  CaseRecord rec = sample_case();
  CaseRecord other = sample_case(1);
  // Every enum at a non-default value, unknown kernel metadata as -1/NaN.
  other.op.context_lengths.clear();
  other.op.kv = KvDtype::k16v8;
  other.op.k_path = KPath::k16;
  other.op.mode = TransformMode::none;
  other.op.k_repr = KRepr::prebias;
  other.op.rope = RopeLayout::pre_rope;
  other.op.scale = ScaleGranularity::per_tensor;
  other.op.cache = CacheState::l2_warm;
  other.op.splits = 7;
  other.op.batch = 3;
  other.op.context = 100000;
  other.op.q_heads = 28;
  other.op.kv_heads = 4;
  other.op.head_dim = 64;
  other.op.page_size = 64;
  other.status = CaseStatus::unsupported;
  other.message = "no FP8 path on this device";
  other.kernel = KernelMeta{};
  other.measurements.clear();
  other.artifacts.clear();
  std::int64_t rec_id = 0, other_id = 0;
  {
    RunStore store = RunStore::open(path);
    RunInfo run = sample_run();
    store.begin_run(run);
    rec_id = store.add_case(run.id, rec);
    other_id = store.add_case(run.id, other);
    EXPECT_EQ(rec.id, rec_id);
    EXPECT_EQ(rec.run_id, run.id);
  }
  // Reopen so nothing can come from memory.
  RunStore store = RunStore::open_read_only(path);
  const CaseRecord loaded = store.load_case(rec_id, true);
  EXPECT_EQ(loaded.id, rec_id);
  EXPECT_EQ(loaded.op.context_lengths.size(), 64u);
  expect_same_case(rec, loaded, true);
  EXPECT_EQ(loaded.measurement("latency_us"), 123.5);
  EXPECT_FALSE(loaded.measurement("nope").has_value());

  const CaseRecord loaded_other = store.load_case(other_id, true);
  expect_same_case(other, loaded_other, true);
  EXPECT_EQ(loaded_other.kernel.regs_per_thread, -1);
  EXPECT_TRUE(std::isnan(loaded_other.kernel.occupancy_achieved));

  // Without artifacts, everything else is still there.
  const CaseRecord light = store.load_case(rec_id, false);
  EXPECT_TRUE(light.artifacts.empty());
  expect_same_case(rec, light, false);
  EXPECT_THROW(store.load_case(12345), StoreError);
}

TEST(RunStore, ArtifactChecksumAndSizeAreStored) {
  TempDir tmp;
  RunStore store = RunStore::open(tmp.file("s.sqlite"));
  RunInfo run = sample_run();
  store.begin_run(run);
  CaseRecord rec = sample_case();
  rec.artifacts = {{"abc.txt", "text/plain", {'a', 'b', 'c'}}};
  store.add_case(run.id, rec);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(store.handle(), "SELECT size, sha256 FROM artifacts", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 3);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 1)),
               "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  sqlite3_finalize(st);
}

// Damage inside an artifact's bytes (overflow pages no structure check reads) is told by
// its checksum when it is loaded, naming the case and the artifact.
TEST(RunStore, ADamagedArtifactIsAnErrorWhenLoaded) {
  TempDir tmp;
  RunStore store = RunStore::open(tmp.file("s.sqlite"));
  RunInfo run = sample_run();
  store.begin_run(run);
  CaseRecord rec = sample_case();
  rec.artifacts = {{"ncu.csv", "text/csv", std::vector<std::uint8_t>(20000, 'x')}};
  const std::int64_t id = store.add_case(run.id, rec);
  EXPECT_EQ(store.load_case(id, true).artifacts.at(0).data.size(), 20000u);
  ASSERT_EQ(sqlite3_exec(store.handle(), "UPDATE artifacts SET data = zeroblob(20000)", nullptr, nullptr, nullptr),
            SQLITE_OK);
  try {
    store.load_case(id, true);
    ADD_FAILURE() << "a damaged artifact loaded";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("artifact 'ncu.csv' is damaged"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(store.load_case(id, false));  // without the bytes, the case still reads
}

TEST(RunStore, DuplicateKeyInSameRunIsRefusedAndNothingIsWritten) {
  TempDir tmp;
  RunStore store = RunStore::open(tmp.file("s.sqlite"));
  RunInfo run = sample_run();
  store.begin_run(run);
  CaseRecord rec = sample_case();
  store.add_case(run.id, rec);
  CaseRecord again = sample_case();
  try {
    store.add_case(run.id, again);
    FAIL() << "duplicate case_key accepted";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find(rec.case_key), std::string::npos) << e.what();
  }
  EXPECT_EQ(store.case_count(), 1);
  EXPECT_EQ(raw_count(store.path(), "measurements"), static_cast<long long>(rec.measurements.size()));
  EXPECT_THROW(store.add_case(999, again), StoreError);
  EXPECT_EQ(store.case_count(), 1);
}

TEST(RunStore, EmptyCaseKeyDefaultsToOperatingPointKey) {
  TempDir tmp;
  RunStore store = RunStore::open(tmp.file("s.sqlite"));
  RunInfo run = sample_run();
  store.begin_run(run);
  CaseRecord rec = sample_case();
  rec.case_key.clear();
  const auto id = store.add_case(run.id, rec);
  EXPECT_EQ(store.load_case(id).case_key, rec.op.key());
}

TEST(RunStore, HasCaseLooksAcrossRunsOfTheSameBackendAndDevice) {
  TempDir tmp;
  RunStore store = RunStore::open(tmp.file("s.sqlite"));
  RunInfo first = sample_run("cuda", "H200"), second = sample_run("cuda", "H200");
  store.begin_run(first);
  store.begin_run(second);
  CaseRecord rec = sample_case();
  store.add_case(first.id, rec);
  EXPECT_TRUE(store.has_case("cuda", "H200", rec.case_key));
  EXPECT_FALSE(store.has_case("cuda", "H100", rec.case_key));
  EXPECT_FALSE(store.has_case("sim", "H200", rec.case_key));
  EXPECT_FALSE(store.has_case("cuda", "H200", rec.case_key + "x"));
}

// Resume reruns a case that errored (its cause may be fixed now); answers are kept.
TEST(RunStore, AnErrorCaseIsNotAResultAndRunsAgainOnResume) {
  TempDir tmp;
  RunStore store = RunStore::open(tmp.file("s.sqlite"));
  RunInfo first = sample_run("cpu", "cpu0"), second = sample_run("cpu", "cpu0");
  store.begin_run(first);
  CaseRecord errored = sample_case();
  errored.status = CaseStatus::error;
  errored.message = "plugin: cannot open the output folder";
  store.add_case(first.id, errored);
  EXPECT_FALSE(store.has_case("cpu", "cpu0", errored.case_key));
  for (CaseStatus answer : {CaseStatus::failed, CaseStatus::unsupported, CaseStatus::ok}) {
    TempDir other;
    RunStore s2 = RunStore::open(other.file("t.sqlite"));
    RunInfo run = sample_run("cpu", "cpu0");
    s2.begin_run(run);
    CaseRecord rec = sample_case();
    rec.status = answer;
    s2.add_case(run.id, rec);
    EXPECT_TRUE(s2.has_case("cpu", "cpu0", rec.case_key)) << to_string(answer);
  }
  // The rerun's result sits beside the error, which stays as history.
  store.begin_run(second);
  CaseRecord rerun = sample_case();
  store.add_case(second.id, rerun);
  EXPECT_TRUE(store.has_case("cpu", "cpu0", rerun.case_key));
  EXPECT_EQ(store.case_count(), 2);
}

TEST(RunStore, ANegativeUserVersionIsRefusedWithoutWriting) {
  TempDir tmp;
  const std::string path = tmp.file("s.sqlite");
  {
    RunStore store = RunStore::open(path);
    RunInfo run = sample_run("cpu", "cpu0");
    store.begin_run(run);
  }
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_exec(db, "PRAGMA user_version = -1", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
  const auto before = read_bytes(path);
  try {
    RunStore::open(path);
    FAIL() << "user_version -1 opened";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("user_version -1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(RunStore::open_read_only(path), StoreError);
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
}

namespace {
// A writer killed mid-transaction in rollback-journal mode: leaves a hot FILE-journal.
void kill_a_writer_mid_transaction(const std::string& path) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    sqlite3* db = nullptr;
    if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) _exit(2);
    sqlite3_exec(db, "PRAGMA journal_mode = DELETE; PRAGMA cache_size = 2; BEGIN;", nullptr, nullptr, nullptr);
    sqlite3_exec(db, "UPDATE measurements SET value = value + 1; UPDATE cases SET message = 'half written';", nullptr,
                 nullptr, nullptr);
    _exit(9);  // no commit, no rollback, no close
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 9);
}
}  // namespace

// A kill during a write leaves a hot journal; every command then failed with "attempt to
// write a readonly database". The store rolls it back itself when the file is writable.
TEST(RunStore, AHotJournalFromAKilledWriterIsRolledBack) {
  TempDir tmp;
  const std::string path = tmp.file("s.sqlite");
  {
    RunStore store = RunStore::open(path);
    RunInfo run = sample_run("cpu", "cpu0");
    store.begin_run(run);
    for (int i = 0; i < 40; ++i) {
      CaseRecord rec = sample_case(i);
      store.add_case(run.id, rec);
    }
  }
  const auto committed = read_bytes(path);
  kill_a_writer_mid_transaction(path);
  ASSERT_TRUE(std::filesystem::exists(path + "-journal")) << "the test did not leave a journal";
  {
    RunStore store = RunStore::open_read_only(path);
    EXPECT_EQ(store.case_count(), 40);
    for (const CaseSummary& c : store.cases()) EXPECT_NE(c.record.message, "half written");
  }
  EXPECT_FALSE(std::filesystem::exists(path + "-journal"));
  EXPECT_EQ(read_bytes(path), committed) << "rolled back to the last commit";

  if (geteuid() == 0) {
    std::printf("[ NOTE ] running as root: the unwritable-folder case cannot be made here, not checked\n");
    return;
  }
  kill_a_writer_mid_transaction(path);
  std::filesystem::permissions(tmp.path(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  try {
    RunStore::open_read_only(path);
    ADD_FAILURE() << "a hot journal in an unwritable folder opened";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("not writable"), std::string::npos) << e.what();
  }
  std::filesystem::permissions(tmp.path(), std::filesystem::perms::owner_all);
}

// A run left open by a process that is gone is finished, marked interrupted, at the next
// read-write open; one whose process lives on (this one) stays open.
TEST(RunStore, ARunLeftOpenByAKilledProcessIsMarkedInterrupted) {
  TempDir tmp;
  const std::string path = tmp.file("i.sqlite");
  RunStore store = RunStore::open(path);
  RunInfo mine = sample_run("cpu", "cpu0");
  mine.notes = "sweep a";
  store.begin_run(mine);
  const pid_t child = fork();
  if (child == 0) {
    RunStore theirs = RunStore::open(path);
    RunInfo run = sample_run("cpu", "cpu0");
    run.notes = "sweep b";
    theirs.begin_run(run);
    _exit(0);  // as if killed: the run is never finished
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  {
    const std::vector<RunInfo> before = RunStore::open_read_only(path).runs();
    ASSERT_EQ(before.size(), 2u);
    EXPECT_TRUE(before[1].finished_at.empty()) << "a read-only open changes nothing";
  }
  const std::vector<RunInfo> runs = RunStore::open(path).runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_TRUE(runs[0].finished_at.empty()) << "this process still runs it";
  EXPECT_FALSE(runs[1].finished_at.empty());
  EXPECT_NE(runs[1].notes.find("sweep b (interrupted: process " + std::to_string(child)), std::string::npos)
      << runs[1].notes;
}

// Claims: a case is run by one process only; a dead owner's claim is taken over.
TEST(RunStore, AClaimKeepsOthersOffUntilTheCaseIsStoredOrItsOwnerIsGone) {
  TempDir tmp;
  const std::string path = tmp.file("c.sqlite");
  RunStore store = RunStore::open(path);
  RunInfo run = sample_run("cpu", "cpu0");
  store.begin_run(run);
  CaseRecord rec = sample_case(1);
  const std::string key = rec.op.key();
  rec.case_key = key;
  using Outcome = RunStore::ClaimOutcome;
  EXPECT_EQ(store.claim_case("cpu", "cpu0", key).outcome, Outcome::claimed);
  EXPECT_EQ(store.claim_case("cpu", "cpu0", key).outcome, Outcome::claimed) << "its own claim again";

  // Another live process on this host holds it (our parent exists as long as we run).
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  const auto set_owner = [&](const std::string& owner_host, long long pid, const char* when) {
    const std::string sql = "UPDATE claims SET host = '" + owner_host + "', pid = " + std::to_string(pid) +
                            ", claimed_at = " + when + ", heartbeat_at = " + when + " WHERE case_key = '" + key + "'";
    ASSERT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(raw);
  };
  set_owner(host, getppid(), "1e12");
  const RunStore::Claim held = store.claim_case("cpu", "cpu0", key);
  EXPECT_EQ(held.outcome, Outcome::claimed_by_other);
  EXPECT_EQ(held.owner, std::string(host) + ":" + std::to_string(getppid()));
  // The owner is gone (a child that exited and was reaped): its claim is taken over.
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  set_owner(host, child, "1e12");
  EXPECT_EQ(store.claim_case("cpu", "cpu0", key).outcome, Outcome::claimed);
  // On another host, a claim with a fresh heartbeat is respected and a stale one taken over.
  set_owner("elsewhere", 1, "1e12");
  EXPECT_EQ(store.claim_case("cpu", "cpu0", key).outcome, Outcome::claimed_by_other);
  set_owner("elsewhere", 1, "0");
  EXPECT_EQ(store.claim_case("cpu", "cpu0", key).outcome, Outcome::claimed);
  // Another backend's or device's claim is another case.
  EXPECT_EQ(store.claim_case("cpu", "cpu1", key).outcome, Outcome::claimed);

  // Storing removes the claim; a stored case is not claimed again.
  EXPECT_GT(store.add_case_unless_stored(run.id, rec), 0);
  sqlite3_stmt* q = nullptr;
  const std::string count = "SELECT COUNT(*) FROM claims WHERE device = 'cpu0'";
  ASSERT_EQ(sqlite3_prepare_v2(raw, count.c_str(), -1, &q, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(q, 0), 0);
  sqlite3_finalize(q);
  EXPECT_EQ(store.claim_case("cpu", "cpu0", key).outcome, Outcome::stored);
  // release_claim gives up only this process's claim.
  store.release_claim("cpu", "cpu1", key);
  EXPECT_EQ(store.claim_case("cpu", "cpu1", key).outcome, Outcome::claimed);
  sqlite3_close(raw);
}

// A real-valued column of the claim of case_key, read through a connection of its own.
double claim_column(const std::string& path, const std::string& case_key, const std::string& column) {
  sqlite3* raw = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_busy_timeout(raw, 5000);
  sqlite3_stmt* q = nullptr;
  const std::string sql = "SELECT " + column + " FROM claims WHERE case_key = ?";
  EXPECT_EQ(sqlite3_prepare_v2(raw, sql.c_str(), -1, &q, nullptr), SQLITE_OK) << sqlite3_errmsg(raw);
  sqlite3_bind_text(q, 1, case_key.c_str(), -1, SQLITE_TRANSIENT);
  const double value = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_double(q, 0) : NAN;
  sqlite3_finalize(q);
  sqlite3_close(raw);
  return value;
}

// Runs SQL through a connection of its own that waits for a lock (the store's heartbeat may
// hold it for a moment).
void exec_waiting(const std::string& path, const std::string& sql) {
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  sqlite3_busy_timeout(raw, 5000);
  const int rc = sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr);
  EXPECT_EQ(rc, SQLITE_OK) << sqlite3_errmsg(raw) << " in " << sql;
  sqlite3_close(raw);
}

double now_unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// From another host, what tells a live owner from a dead one is the heartbeat, not the
// claim's age: a claim taken hours ago whose owner still beats is left to it, and one taken a
// minute ago whose heartbeat stopped longer than the timeout ago is taken over.
TEST(RunStore, AClaimFromAnotherHostIsItsOwnersWhileItsHeartbeatIsFresh) {
  TempDir tmp;
  const std::string path = tmp.file("h.sqlite");
  RunStore store = RunStore::open(path);
  const std::string key = sample_case(1).op.key();
  using Outcome = RunStore::ClaimOutcome;
  ASSERT_EQ(store.claim_case("cpu", "cpu0", key).outcome, Outcome::claimed);
  const auto set_claim = [&](double claimed_at, double heartbeat_at) {
    exec_waiting(path, "UPDATE claims SET host = 'elsewhere', pid = 77, claimed_at = " + std::to_string(claimed_at) +
                           ", heartbeat_at = " + std::to_string(heartbeat_at));
  };
  const double timeout = RunStore::kClaimHeartbeatTimeoutSeconds;
  double now = now_unix_seconds();
  set_claim(now - 3 * 3600.0, now - 10);
  const RunStore::Claim fresh = store.claim_case("cpu", "cpu0", key);
  EXPECT_EQ(fresh.outcome, Outcome::claimed_by_other) << "three hours old, its heartbeat 10 s";
  EXPECT_EQ(fresh.owner, "elsewhere:77");
  set_claim(now - 3 * 3600.0, now - (timeout - 30));
  EXPECT_EQ(store.claim_case("cpu", "cpu0", key).outcome, Outcome::claimed_by_other) << "30 s before the timeout";

  now = now_unix_seconds();
  set_claim(now - 60, now - (timeout + 30));
  EXPECT_EQ(store.claim_case("cpu", "cpu0", key).outcome, Outcome::claimed) << "silent 30 s past the timeout";
  // Taken over: the claim is this process's, claimed and beating now.
  EXPECT_GE(claim_column(path, key, "claimed_at"), now - 1);
  EXPECT_GE(claim_column(path, key, "heartbeat_at"), now - 1);
  EXPECT_EQ(store.claim_case("cpu", "cpu0", key).outcome, Outcome::claimed) << "its own claim again";
}

// The owner of a claim refreshes its heartbeat while it holds it (a case that runs for
// longer than the timeout stays claimed), and touches no other process's claims.
TEST(RunStore, TheHeartbeatOfAHeldClaimAdvancesWhileItsOwnerHoldsIt) {
  // A short beat, and a short lock wait so that a refresh can be seen to fail below.
  RunStore::set_claim_heartbeat_interval(std::chrono::milliseconds(20));
  RunStore::set_lock_wait(std::chrono::milliseconds(100));
  struct Restore {
    ~Restore() {
      RunStore::set_claim_heartbeat_interval(
          std::chrono::milliseconds(static_cast<long>(RunStore::kClaimHeartbeatIntervalSeconds * 1000)));
      RunStore::set_lock_wait(std::chrono::milliseconds(RunStore::kDefaultLockWaitMs));
    }
  } restore;
  TempDir tmp;
  const std::string path = tmp.file("b.sqlite");
  RunStore store = RunStore::open(path);
  const std::string mine = sample_case(1).op.key(), theirs = sample_case(2).op.key() + "|other";
  using Outcome = RunStore::ClaimOutcome;
  ASSERT_EQ(store.claim_case("cpu", "cpu0", theirs).outcome, Outcome::claimed);
  exec_waiting(path,
               "UPDATE claims SET host = 'elsewhere', pid = 77, heartbeat_at = 1000 WHERE case_key = '" + theirs + "'");
  ASSERT_EQ(store.claim_case("cpu", "cpu0", mine).outcome, Outcome::claimed);
  const double claimed_at = claim_column(path, mine, "claimed_at");
  EXPECT_GE(claim_column(path, mine, "heartbeat_at"), claimed_at) << "a claim starts beating when it is taken";

  const auto beat_after = [&](double since) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    double heartbeat = since;
    while (heartbeat <= since && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      heartbeat = claim_column(path, mine, "heartbeat_at");
    }
    return heartbeat;
  };
  const double first = beat_after(claimed_at);
  EXPECT_GT(first, claimed_at) << "no heartbeat within 10 s at a 20 ms interval";
  EXPECT_GT(beat_after(first), first) << "it goes on beating";
  EXPECT_EQ(claim_column(path, mine, "claimed_at"), claimed_at);
  EXPECT_EQ(claim_column(path, theirs, "heartbeat_at"), 1000.0) << "another process's claim is not refreshed";

  // While another writer holds the lock past the lock wait, refreshes fail, quietly; once
  // it is free the heartbeat goes on, and so does the store.
  sqlite3* locker = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &locker), SQLITE_OK);
  sqlite3_busy_timeout(locker, 5000);
  ASSERT_EQ(sqlite3_exec(locker, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(locker);
  const double locked_at = claim_column(path, mine, "heartbeat_at");
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(claim_column(path, mine, "heartbeat_at"), locked_at) << "no beat while another writer holds the lock";
  sqlite3_exec(locker, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(locker);
  EXPECT_GT(beat_after(locked_at), locked_at) << "beats again once the lock is free";
  EXPECT_EQ(store.claim_case("cpu", "cpu0", mine).outcome, Outcome::claimed);
}

// Two sweeps on one file: the second to finish a key stores nothing, atomically.
TEST(RunStore, AddCaseUnlessStoredSkipsAKeyAnotherRunStored) {
  TempDir tmp;
  const std::string path = tmp.file("s.sqlite");
  RunStore a = RunStore::open(path), b = RunStore::open(path);
  RunInfo run_a = sample_run("cpu", "cpu0"), run_b = sample_run("cpu", "cpu0"), other = sample_run("sim", "h200");
  a.begin_run(run_a);
  b.begin_run(run_b);
  b.begin_run(other);
  CaseRecord first = sample_case(1), second = sample_case(1), elsewhere = sample_case(1);
  EXPECT_GT(a.add_case_unless_stored(run_a.id, first), 0);
  EXPECT_EQ(b.add_case_unless_stored(run_b.id, second), 0) << "the same key on the same backend and device";
  EXPECT_EQ(second.id, 0);
  EXPECT_GT(b.add_case_unless_stored(other.id, elsewhere), 0) << "another backend's result is not this one's";
  EXPECT_EQ(a.case_count(), 2);
}

TEST(RunStore, CasesFilterJoinsRuns) {
  TempDir tmp;
  RunStore store = RunStore::open(tmp.file("s.sqlite"));
  RunInfo cpu = sample_run("cpu", "cpu0"), cuda = sample_run("cuda", "H200");
  store.begin_run(cpu);
  store.begin_run(cuda);
  // cpu: three cases over kv and batch; cuda: two cases over cache and status.
  std::vector<CaseRecord> recs;
  for (int i = 0; i < 5; ++i) recs.push_back(sample_case(i));
  recs[1].op.kv = KvDtype::k16v8;
  recs[1].op.k_path = KPath::k16;
  recs[2].op.batch = 8;
  recs[2].op.context_lengths.clear();
  recs[3].op.cache = CacheState::l2_warm;
  recs[4].status = CaseStatus::failed;
  recs[4].op.head_dim = 64;
  recs[4].op.context = 1024;
  recs[4].op.mode = TransformMode::separate_kv;
  for (int i = 0; i < 3; ++i) store.add_case(cpu.id, recs[i]);
  for (int i = 3; i < 5; ++i) store.add_case(cuda.id, recs[i]);

  auto ids = [&](const CaseFilter& f) {
    std::vector<std::int64_t> out;
    for (const auto& s : store.cases(f)) out.push_back(s.case_id);
    return out;
  };
  using V = std::vector<std::int64_t>;
  EXPECT_EQ(ids({}), (V{recs[0].id, recs[1].id, recs[2].id, recs[3].id, recs[4].id}));
  CaseFilter f;
  f.backend = "cuda";
  EXPECT_EQ(ids(f), (V{recs[3].id, recs[4].id}));
  f = {};
  f.device = "cpu0";
  f.kv = "k16v8";
  EXPECT_EQ(ids(f), (V{recs[1].id}));
  f = {};
  f.k_path = "k16";
  EXPECT_EQ(ids(f), (V{recs[1].id}));
  f = {};
  f.batch = 8;
  EXPECT_EQ(ids(f), (V{recs[2].id}));
  f = {};
  f.cache = "l2_warm";
  EXPECT_EQ(ids(f), (V{recs[3].id}));
  f = {};
  f.status = CaseStatus::failed;
  EXPECT_EQ(ids(f), (V{recs[4].id}));
  f = {};
  f.head_dim = 64;
  f.context = 1024;
  f.mode = "separate_kv";
  EXPECT_EQ(ids(f), (V{recs[4].id}));
  f = {};
  f.run_id = cpu.id;
  EXPECT_EQ(ids(f), (V{recs[0].id, recs[1].id, recs[2].id}));
  f.backend = "cuda";  // contradicts run_id
  EXPECT_TRUE(ids(f).empty());

  // The summary carries the run identity and the full record without artifacts.
  f = {};
  f.backend = "cuda";
  const auto rows = store.cases(f);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].run_uuid, cuda.uuid);
  EXPECT_EQ(rows[0].backend, "cuda");
  EXPECT_EQ(rows[0].device, "H200");
  EXPECT_EQ(rows[0].run_id, cuda.id);
  expect_same_case(recs[3], rows[0].record, false);
  EXPECT_TRUE(rows[0].record.artifacts.empty());
}

TEST(RunStore, ListingWorksInsideACallersTransaction) {
  TempDir tmp;
  RunStore store = RunStore::open(tmp.file("s.sqlite"));
  RunInfo run = sample_run();
  store.begin_run(run);
  CaseRecord rec = sample_case();
  store.add_case(run.id, rec);
  ASSERT_EQ(sqlite3_exec(store.handle(), "BEGIN", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_EQ(store.cases().size(), 1u);
  EXPECT_EQ(sqlite3_get_autocommit(store.handle()), 0) << "cases() ended the caller's transaction";
  ASSERT_EQ(sqlite3_exec(store.handle(), "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_EQ(store.cases().size(), 1u);
  EXPECT_NE(sqlite3_get_autocommit(store.handle()), 0) << "cases() left its read transaction open";
}

TEST(RunStore, CaseStatusNames) {
  for (CaseStatus s :
       {CaseStatus::ok, CaseStatus::failed, CaseStatus::unsupported, CaseStatus::error, CaseStatus::cancelled})
    EXPECT_EQ(parse_case_status(to_string(s)), s);
  try {
    parse_case_status("done");
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("allowed: ok, failed"), std::string::npos) << e.what();
  }
}

TEST(RunStore, DeletingARunCascadesToItsCases) {
  TempDir tmp;
  RunStore store = RunStore::open(tmp.file("s.sqlite"));
  RunInfo run = sample_run();
  store.begin_run(run);
  CaseRecord rec = sample_case();
  store.add_case(run.id, rec);
  ASSERT_EQ(sqlite3_exec(store.handle(), ("DELETE FROM runs WHERE id = " + std::to_string(run.id)).c_str(), nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  EXPECT_EQ(store.case_count(), 0);
  for (const char* t : {"measurements", "stage_costs", "predictions", "quality", "artifacts"})
    EXPECT_EQ(raw_count(store.path(), t), 0) << t;
}

}  // namespace
}  // namespace tilepath
