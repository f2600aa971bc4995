// Files the store must refuse without changing a byte: not SQLite, truncated,
// somebody else's SQLite database, a newer tilepath schema. Missing and empty
// files become new databases.
#include <gtest/gtest.h>

#include <random>

#include "core/store/run_store.h"
#include "tests/store/store_test_util.h"

namespace tilepath {
namespace {

using namespace store_test;

// Opening `path` read-write and read-only both throw a one-line StoreError that
// contains `expected`, and the file's bytes are unchanged.
void expect_refused_untouched(const std::string& path, const std::string& expected) {
  const std::vector<char> before = read_bytes(path);
  for (bool read_only : {false, true}) {
    try {
      if (read_only)
        RunStore::open_read_only(path);
      else
        RunStore::open(path);
      ADD_FAILURE() << path << " was accepted (read_only=" << read_only << ")";
    } catch (const StoreError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(expected), std::string::npos) << msg;
      EXPECT_EQ(msg.rfind(path, 0), 0u) << "message should start with the path: " << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << "message should be one line: " << msg;
    }
    EXPECT_EQ(read_bytes(path), before) << path << " was modified (read_only=" << read_only << ")";
  }
  EXPECT_FALSE(fs::exists(path + "-journal"));
}

// A real store with a few cases, closed (WAL checkpointed into the file).
void make_real_store(const std::string& path, int cases) {
  RunStore store = RunStore::open(path);
  RunInfo run = sample_run();
  store.begin_run(run);
  for (int i = 0; i < cases; ++i) {
    CaseRecord rec = sample_case(i);
    rec.artifacts.push_back({"big.bin", "application/octet-stream", std::vector<std::uint8_t>(20000, std::uint8_t(i))});
    store.add_case(run.id, rec);
  }
}

TEST(BadFiles, RandomBytesAreNotADatabase) {
  TempDir tmp;
  const std::string path = tmp.file("random.sqlite");
  std::mt19937 gen(42);
  std::vector<char> bytes(8192);
  for (char& b : bytes) b = static_cast<char>(gen());
  write_bytes(path, bytes);
  expect_refused_untouched(path, "not a tilepath database (not an SQLite file)");
}

TEST(BadFiles, TextFileIsNotADatabase) {
  TempDir tmp;
  const std::string path = tmp.file("notes.txt");
  const std::string text = "batch,context\n64,4096\n";
  write_bytes(path, std::vector<char>(text.begin(), text.end()));
  expect_refused_untouched(path, "not a tilepath database (not an SQLite file)");
}

TEST(BadFiles, ShortFileWithSqliteMagicIsNotADatabase) {
  TempDir tmp;
  const std::string path = tmp.file("short.sqlite");
  const std::string text = std::string("SQLite format 3") + '\0' + "xyz";
  write_bytes(path, std::vector<char>(text.begin(), text.end()));
  expect_refused_untouched(path, "not a tilepath database");
}

TEST(BadFiles, TruncatedDatabaseIsRefused) {
  TempDir tmp;
  const std::string real = tmp.file("real.sqlite");
  make_real_store(real, 6);
  ASSERT_FALSE(fs::exists(real + "-wal")) << "closing should have checkpointed the WAL";
  std::vector<char> bytes = read_bytes(real);
  ASSERT_GT(bytes.size(), 16384u);
  bytes.resize(bytes.size() / 2);
  const std::string cut = tmp.file("cut.sqlite");
  write_bytes(cut, bytes);
  expect_refused_untouched(cut, "not a tilepath database (truncated");
}

// Random bytes inside a b-tree page: the file still opens for reading what is readable,
// but nothing writes into it (a run or sweep had stored into such a file and exited 0).
TEST(BadFiles, ADamagedPageIsNeverWrittenInto) {
  TempDir tmp;
  const std::string path = tmp.file("damaged.sqlite");
  make_real_store(path, 6);
  std::vector<char> bytes = read_bytes(path);
  const std::size_t page = 4096;
  ASSERT_GT(bytes.size(), 3 * page);
  // The first pages hold the schema and the tables' b-tree roots: scramble page 2's cells.
  std::mt19937 rng(7);
  for (std::size_t i = page + 8; i < page + 208; ++i) bytes[i] = static_cast<char>(rng());
  write_bytes(path, bytes);
  const std::vector<char> before = read_bytes(path);
  try {
    RunStore::open(path);
    ADD_FAILURE() << "a damaged file was opened for writing";
  } catch (const StoreError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path, 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_NE(msg.find("damaged"), std::string::npos) << msg;
  }
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_FALSE(fs::exists(path + "-wal"));
}

TEST(BadFiles, ForeignSqliteDatabaseIsRefused) {
  TempDir tmp;
  const std::string path = tmp.file("foreign.sqlite");
  raw_exec(path, "CREATE TABLE photos(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO photos(name) VALUES ('cat');");
  expect_refused_untouched(path, "not a tilepath database (user_version 0 and foreign tables: photos)");
}

TEST(BadFiles, ForeignDatabaseWithUserVersionIsRefused) {
  TempDir tmp;
  const std::string path = tmp.file("foreign_v1.sqlite");
  raw_exec(path, "CREATE TABLE runs(x); PRAGMA user_version = 1;");
  expect_refused_untouched(path, "not a tilepath database (user_version 1 but no 'cases' table)");
}

TEST(BadFiles, NewerSchemaIsRefused) {
  TempDir tmp;
  const std::string path = tmp.file("future.sqlite");
  make_real_store(path, 1);
  raw_exec(path, "PRAGMA user_version = " + std::to_string(RunStore::current_schema_version() + 1));
  ASSERT_EQ(raw_count(path, "cases"), 1);
  expect_refused_untouched(path, "is newer than this tilepath supports");
}

TEST(BadFiles, MissingAndEmptyFilesBecomeNewDatabases) {
  TempDir tmp;
  const std::string missing = tmp.file("missing.sqlite");
  EXPECT_THROW(RunStore::open_read_only(missing), StoreError);
  EXPECT_FALSE(fs::exists(missing)) << "read-only open must not create the file";
  {
    RunStore store = RunStore::open(missing);
    EXPECT_EQ(store.schema_version(), RunStore::current_schema_version());
  }
  const std::string empty = tmp.file("empty.sqlite");
  write_bytes(empty, {});
  EXPECT_THROW(RunStore::open_read_only(empty), StoreError);
  EXPECT_EQ(fs::file_size(empty), 0u);
  RunStore store = RunStore::open(empty);
  RunInfo run = sample_run();
  store.begin_run(run);
  EXPECT_EQ(store.runs().size(), 1u);
}

TEST(BadFiles, EmptySqliteFileWithoutTablesBecomesTilepath) {
  TempDir tmp;
  const std::string path = tmp.file("blank.sqlite");
  raw_exec(path, "PRAGMA page_size = 4096; VACUUM;");  // a valid SQLite file with no tables
  ASSERT_GT(fs::file_size(path), 0u);
  EXPECT_THROW(RunStore::open_read_only(path), StoreError);
  RunStore store = RunStore::open(path);
  EXPECT_EQ(store.schema_version(), RunStore::current_schema_version());
}

TEST(BadFiles, ReadOnlyNeverWritesAndRejectsWrites) {
  TempDir tmp;
  const std::string path = tmp.file("ro.sqlite");
  make_real_store(path, 2);
  const std::vector<char> before = read_bytes(path);
  {
    RunStore store = RunStore::open_read_only(path);
    EXPECT_EQ(store.case_count(), 2);
    EXPECT_EQ(store.cases().size(), 2u);
    RunInfo run = sample_run();
    EXPECT_THROW(store.begin_run(run), StoreError);
  }
  EXPECT_EQ(read_bytes(path), before);
}

}  // namespace
}  // namespace tilepath
