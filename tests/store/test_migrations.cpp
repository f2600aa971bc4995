// The schema ladder: every released fixture upgrades to the current schema with
// every row intact, the upgrade matches a freshly created database, and a failed
// upgrade leaves the file at its old version.
#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "core/sha256.h"
#include "core/store/run_store.h"
#include "tests/store/store_test_util.h"

namespace tilepath {
namespace {

using namespace store_test;

const std::string kFixtures = std::string(TILEPATH_TEST_DATA_DIR) + "/store/fixtures/";

// A cell as SQLite holds it: type plus value in text form (blobs as hex).
struct Cell {
  int type = SQLITE_NULL;
  std::string value;
  bool operator==(const Cell&) const = default;
};
using Row = std::map<std::string, Cell>;  // column -> cell
using Table = std::map<long long, Row>;   // id -> row

class RawDb {
 public:
  explicit RawDb(const std::string& path, bool read_only = true) {
    const int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db_, flags, nullptr), SQLITE_OK) << path;
  }
  ~RawDb() { sqlite3_close(db_); }
  sqlite3* get() const { return db_; }

  // All rows of a query as maps of column name -> cell.
  std::vector<Row> query(const std::string& sql) const {
    sqlite3_stmt* st = nullptr;
    std::vector<Row> rows;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql << ": " << sqlite3_errmsg(db_);
    while (st && sqlite3_step(st) == SQLITE_ROW) {
      Row row;
      for (int c = 0; c < sqlite3_column_count(st); ++c) {
        Cell cell;
        cell.type = sqlite3_column_type(st, c);
        if (cell.type == SQLITE_BLOB) {
          const auto* p = static_cast<const unsigned char*>(sqlite3_column_blob(st, c));
          static const char* digits = "0123456789abcdef";
          for (int i = 0; i < sqlite3_column_bytes(st, c); ++i) {
            cell.value += digits[p[i] >> 4];
            cell.value += digits[p[i] & 0xf];
          }
        } else if (cell.type != SQLITE_NULL) {
          cell.value = reinterpret_cast<const char*>(sqlite3_column_text(st, c));
        }
        row[sqlite3_column_name(st, c)] = cell;
      }
      rows.push_back(std::move(row));
    }
    sqlite3_finalize(st);
    return rows;
  }
  Table table(const std::string& name) const {
    Table t;
    for (auto& row : query("SELECT * FROM " + name)) t[std::stoll(row.at("id").value)] = row;
    return t;
  }
  int user_version() const { return std::stoi(query("PRAGMA user_version").at(0).at("user_version").value); }
  // Column descriptions and index names: the shape of the schema, independent of DDL whitespace.
  std::vector<std::string> shape(const std::string& table) const {
    std::vector<std::string> out;
    for (auto& r : query("PRAGMA table_info(" + table + ")"))
      out.push_back(r.at("name").value + " " + r.at("type").value + " notnull=" + r.at("notnull").value +
                    " default=" + r.at("dflt_value").value + " pk=" + r.at("pk").value);
    for (auto& r : query("PRAGMA index_list(" + table + ")")) out.push_back("index " + r.at("name").value);
    for (auto& r : query("PRAGMA foreign_key_list(" + table + ")"))
      out.push_back("fk " + r.at("table").value + "." + r.at("to").value + " on_delete=" + r.at("on_delete").value);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

const std::vector<std::string> kTables = {"runs",        "cases",   "measurements", "stage_costs",
                                          "predictions", "quality", "artifacts"};

std::string copy_fixture(const TempDir& tmp, int version) {
  const std::string src = kFixtures + "schema_v" + std::to_string(version) + ".sqlite";
  const std::string dst = tmp.file("fixture_v" + std::to_string(version) + ".sqlite");
  EXPECT_TRUE(fs::exists(src)) << src;
  fs::copy_file(src, dst, fs::copy_options::overwrite_existing);
  return dst;
}

TEST(Migrations, CurrentVersionHasAFixture) {
  for (int v = 1; v <= RunStore::current_schema_version(); ++v) {
    EXPECT_TRUE(fs::exists(kFixtures + "schema_v" + std::to_string(v) + ".sqlite")) << "missing fixture for v" << v;
    EXPECT_TRUE(fs::exists(kFixtures + "schema_v" + std::to_string(v) + ".sql")) << "missing fixture SQL for v" << v;
  }
}

// The .sql next to each fixture still produces the same rows (it is the recipe).
TEST(Migrations, FixtureSqlRecreatesFixture) {
  TempDir tmp;
  for (int v = 1; v <= RunStore::current_schema_version(); ++v) {
    const std::string made = tmp.file("made_v" + std::to_string(v) + ".sqlite");
    const auto sql = read_bytes(kFixtures + "schema_v" + std::to_string(v) + ".sql");
    raw_exec(made, std::string(sql.begin(), sql.end()));
    RawDb fixture(kFixtures + "schema_v" + std::to_string(v) + ".sqlite"), remade(made);
    EXPECT_EQ(fixture.user_version(), v);
    EXPECT_EQ(remade.user_version(), v);
    for (const auto& t : kTables) {
      EXPECT_EQ(fixture.shape(t), remade.shape(t)) << t << " v" << v;
      EXPECT_EQ(fixture.table(t), remade.table(t)) << t << " v" << v;
    }
  }
}

TEST(Migrations, EveryFixtureUpgradesToCurrentWithEveryRow) {
  TempDir tmp;
  const std::string fresh_path = tmp.file("fresh.sqlite");
  { RunStore fresh = RunStore::open(fresh_path); }
  RawDb fresh(fresh_path);

  for (int v = 1; v <= RunStore::current_schema_version(); ++v) {
    SCOPED_TRACE("fixture v" + std::to_string(v));
    const std::string path = copy_fixture(tmp, v);
    std::map<std::string, Table> before;
    {
      RawDb old(path);
      ASSERT_EQ(old.user_version(), v);
      for (const auto& t : kTables) before[t] = old.table(t);
    }
    {
      RunStore store = RunStore::open(path);
      EXPECT_EQ(store.schema_version(), RunStore::current_schema_version());
      // Every case reads back through the API.
      EXPECT_EQ(store.case_count(), static_cast<std::int64_t>(before["cases"].size()));
      for (const auto& [id, row] : before["cases"]) {
        const CaseRecord rec = store.load_case(id, true);
        EXPECT_EQ(rec.case_key, row.at("case_key").value);
      }
    }
    RawDb upgraded(path);
    EXPECT_EQ(upgraded.user_version(), RunStore::current_schema_version());
    for (const auto& t : kTables) {
      EXPECT_EQ(upgraded.shape(t), fresh.shape(t)) << t << ": upgraded schema differs from a new database";
      const Table after = upgraded.table(t);
      ASSERT_EQ(after.size(), before[t].size()) << t;
      for (const auto& [id, old_row] : before[t]) {
        ASSERT_TRUE(after.count(id)) << t << " row " << id << " lost";
        for (const auto& [column, cell] : old_row) {
          if (v == 1 && t == "quality" && column == "metric") continue;    // split by v2, checked below
          if (v <= 3 && (t == "quality" && column == "metric")) continue;  // kernel check renamed by v4, below
          if (v <= 3 && (t == "measurements" && column == "name")) continue;
          EXPECT_EQ(after.at(id).at(column), cell) << t << "." << column << " row " << id;
        }
      }
    }
  }
}

TEST(Migrations, V2BackfillsChecksumsAndSplitsQualityDistribution) {
  TempDir tmp;
  const std::string path = copy_fixture(tmp, 1);
  std::map<long long, std::string> old_metric;
  {
    RawDb old(path);
    for (auto& [id, row] : old.table("quality")) old_metric[id] = row.at("metric").value;
  }
  { RunStore store = RunStore::open(path); }
  RawDb db(path);
  const Table artifacts = db.table("artifacts");
  ASSERT_FALSE(artifacts.empty());
  for (const auto& [id, row] : artifacts) {
    // Recompute from the blob itself: the hex cell back to bytes.
    std::vector<std::uint8_t> bytes;
    const std::string& hex = row.at("data").value;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2) bytes.push_back(std::stoi(hex.substr(i, 2), nullptr, 16));
    EXPECT_EQ(row.at("sha256").value, tilepath::sha256_hex(bytes)) << "artifact " << id;
    EXPECT_EQ(std::stoll(row.at("size").value), static_cast<long long>(bytes.size()));
  }
  for (const auto& [id, row] : db.table("quality")) {
    const std::string& old = old_metric.at(id);
    const auto at = old.find('@');
    if (at == std::string::npos) {
      EXPECT_EQ(row.at("metric").value, old);
      EXPECT_EQ(row.at("distribution").value, "unknown");
    } else {
      EXPECT_EQ(row.at("metric").value, old.substr(0, at));
      EXPECT_EQ(row.at("distribution").value, old.substr(at + 1));
    }
  }
  // Through the API: the quality rows of case 3 carry their distribution.
  RunStore store = RunStore::open_read_only(path);
  const CaseRecord rec = store.load_case(3);
  ASSERT_EQ(rec.quality.size(), 2u);
  EXPECT_EQ(rec.quality[0].metric, "rel_l2");
  EXPECT_EQ(rec.quality[0].distribution, "qwen_bias");
  EXPECT_FALSE(rec.quality[0].passed);
}

TEST(Migrations, V3KeepsOlderPredictionsMarkedAsNotRecordingUnknownStages) {
  TempDir tmp;
  const std::string path = copy_fixture(tmp, 2);
  RunStore store = RunStore::open(path);
  const CaseRecord rec = store.load_case(1);
  ASSERT_EQ(rec.predictions.size(), 1u);
  // Derived before unknown stages were recorded: neither "none unknown" nor a made-up list.
  EXPECT_FALSE(rec.predictions[0].unknown_stages.has_value());
  EXPECT_EQ(RawDb(path).query("SELECT unknown_stages FROM predictions WHERE id = 1").at(0).at("unknown_stages").type,
            SQLITE_NULL);
}

TEST(Migrations, V3PredictionsReadBackTheirUnknownStages) {
  TempDir tmp;
  RunStore store = RunStore::open(copy_fixture(tmp, 3));
  const CaseRecord rec = store.load_case(1);
  ASSERT_EQ(rec.predictions.size(), 1u);
  ASSERT_TRUE(rec.predictions[0].unknown_stages.has_value());
  EXPECT_EQ(*rec.predictions[0].unknown_stages, (std::vector<std::string>{"v_load", "v_prep", "pv", "accum"}));
  EXPECT_FALSE(store.load_case(2).predictions.at(0).unknown_stages.has_value());
}

TEST(Migrations, V4NamesTheSpeedRunsKernelCheckAndLeavesGateRows) {
  TempDir tmp;
  const std::string path = copy_fixture(tmp, 3);
  std::map<long long, Row> old_quality, old_measurements;
  {
    RawDb old(path);
    old_quality = old.table("quality");
    old_measurements = old.table("measurements");
  }
  { RunStore store = RunStore::open(path); }
  RawDb db(path);
  int renamed = 0;
  for (const auto& [id, row] : db.table("quality")) {
    const Row& before = old_quality.at(id);
    const bool kernel_check = before.at("distribution").value == "random";
    EXPECT_EQ(row.at("metric").value, (kernel_check ? "kernel_check_" : "") + before.at("metric").value) << id;
    renamed += kernel_check;
  }
  EXPECT_EQ(renamed, 2) << "the fixture's two kernel-check rows";
  for (const auto& [id, row] : db.table("measurements")) {
    const std::string& name = old_measurements.at(id).at("name").value;
    const bool rows = name == "rows_checked" || name == "rows_total";
    EXPECT_EQ(row.at("name").value, (rows ? "kernel_check_" : "") + name) << id;
  }
  // Through the API, case 2's check is no longer a gate row named rel_l2.
  const CaseRecord rec = RunStore::open_read_only(path).load_case(2);
  ASSERT_EQ(rec.quality.size(), 2u);
  EXPECT_EQ(rec.quality[0].metric, "kernel_check_rel_l2");
  EXPECT_EQ(rec.quality[1].metric, "kernel_check_max_abs");
}

// v6: every claim of a v5 file gets a heartbeat, its claimed_at (when its owner was last
// known alive), and the claims table matches a fresh one.
TEST(Migrations, V6GivesEveryClaimItsClaimedAtAsHeartbeat) {
  TempDir tmp;
  const std::string fresh_path = tmp.file("fresh.sqlite");
  { RunStore fresh = RunStore::open(fresh_path); }
  const std::string path = copy_fixture(tmp, 5);
  const std::vector<Row> before = RawDb(path).query("SELECT * FROM claims ORDER BY case_key");
  ASSERT_EQ(before.size(), 1u);
  { RunStore store = RunStore::open(path); }
  RawDb upgraded(path);
  EXPECT_EQ(upgraded.shape("claims"), RawDb(fresh_path).shape("claims"));
  const std::vector<Row> after = upgraded.query("SELECT * FROM claims ORDER BY case_key");
  ASSERT_EQ(after.size(), 1u);
  for (const auto& [column, cell] : before[0]) EXPECT_EQ(after[0].at(column), cell) << column;
  EXPECT_EQ(after[0].at("heartbeat_at"), after[0].at("claimed_at"));
  EXPECT_EQ(after[0].at("heartbeat_at").type, SQLITE_FLOAT);
  // The v6 fixture's claims table is the one this build creates.
  EXPECT_EQ(RawDb(kFixtures + "schema_v6.sqlite").shape("claims"), RawDb(fresh_path).shape("claims"));
}

// v6 changed nothing readers read: a v5 file (the bundled database) opens read-only as it
// is, with nothing written, while older ones are refused below.
TEST(Migrations, ReadOnlyOpenReadsAFileOfTheOldestSchemaReadAsIsWithoutWriting) {
  ASSERT_LE(RunStore::oldest_schema_read_as_is(), 5);
  TempDir tmp;
  const std::string path = copy_fixture(tmp, 5);
  const auto before = read_bytes(path);
  {
    RunStore store = RunStore::open_read_only(path);
    EXPECT_EQ(store.schema_version(), 5);
    EXPECT_FALSE(store.cases().empty());
    EXPECT_FALSE(store.runs().empty());
  }
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_FALSE(fs::exists(path + "-wal"));
}

// v7: every case of a v6 file ran mma_sync (cuda kernels issued mma.sync, cpu emulated its
// numerics, sim modelled them, hip issued MFMA) and says so; the cases table matches a
// fresh one and nothing else changes.
TEST(Migrations, V7GivesEveryOlderCaseMmaSync) {
  TempDir tmp;
  const std::string fresh_path = tmp.file("fresh.sqlite");
  { RunStore fresh = RunStore::open(fresh_path); }
  const std::string path = copy_fixture(tmp, 6);
  const Table before = RawDb(path).table("cases");
  ASSERT_FALSE(before.empty());
  for (const auto& [id, row] : before) EXPECT_EQ(row.count("mma"), 0u) << "a v6 case has no mma column";
  {
    RunStore store = RunStore::open(path);
    for (const CaseSummary& c : store.cases()) EXPECT_EQ(c.record.op.mma, Mma::mma_sync) << c.case_id;
  }
  RawDb upgraded(path);
  EXPECT_EQ(upgraded.shape("cases"), RawDb(fresh_path).shape("cases"));
  const Table after = upgraded.table("cases");
  ASSERT_EQ(after.size(), before.size());
  for (const auto& [id, row] : after) {
    EXPECT_EQ(row.at("mma"), (Cell{SQLITE_TEXT, "mma_sync"})) << "case " << id;
    for (const auto& [column, cell] : before.at(id)) EXPECT_EQ(row.at(column), cell) << column << " of case " << id;
  }
  // The v7 fixture's cases table is the one this build creates.
  EXPECT_EQ(RawDb(kFixtures + "schema_v7.sqlite").shape("cases"), RawDb(fresh_path).shape("cases"));
}

// A v7 file's wgmma case reads back as wgmma, its key naming the family.
TEST(Migrations, V7CaseReadsBackItsMatrixInstruction) {
  TempDir tmp;
  RunStore store = RunStore::open_read_only(copy_fixture(tmp, 7));
  const CaseRecord wgmma = store.load_case(4);
  EXPECT_EQ(wgmma.op.mma, Mma::wgmma);
  EXPECT_EQ(wgmma.op.key(), wgmma.case_key);
  EXPECT_EQ(store.load_case(1).op.mma, Mma::mma_sync);
  CaseFilter only_wgmma;
  only_wgmma.mma = "wgmma";
  const auto cases = store.cases(only_wgmma);
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].case_id, 4);
}

// v7 added a column whose value for every older row is known: v5 and v6 files (the bundled
// databases) open read-only as they are, their cases read as mma_sync, a filter on mma
// works, and nothing is written.
TEST(Migrations, ReadOnlyOpenReadsOlderCasesAsMmaSyncWithoutWriting) {
  for (int version : {5, 6}) {
    SCOPED_TRACE("fixture v" + std::to_string(version));
    TempDir tmp;
    const std::string path = copy_fixture(tmp, version);
    const auto before = read_bytes(path);
    {
      RunStore store = RunStore::open_read_only(path);
      EXPECT_EQ(store.schema_version(), version);
      const auto cases = store.cases();
      ASSERT_FALSE(cases.empty());
      for (const CaseSummary& c : cases) {
        EXPECT_EQ(c.record.op.mma, Mma::mma_sync);
        EXPECT_EQ(store.load_case(c.case_id).op.mma, Mma::mma_sync);
      }
      CaseFilter filter;
      filter.mma = "mma_sync";
      EXPECT_EQ(store.cases(filter).size(), cases.size());
      filter.mma = "wgmma";
      EXPECT_TRUE(store.cases(filter).empty());
    }
    EXPECT_EQ(read_bytes(path), before);
    EXPECT_FALSE(fs::exists(path + "-wal"));
  }
}

// v8: runs of a v7 file did not record which device ran them: device_index NULL and
// device_uid '', read back as not recorded (-1, ""); the runs table matches a fresh one.
TEST(Migrations, V8LeavesOlderRunsWithoutADeviceIndex) {
  TempDir tmp;
  const std::string fresh_path = tmp.file("fresh.sqlite");
  { RunStore fresh = RunStore::open(fresh_path); }
  const std::string path = copy_fixture(tmp, 7);
  const Table before = RawDb(path).table("runs");
  ASSERT_FALSE(before.empty());
  {
    RunStore store = RunStore::open(path);
    for (const RunInfo& r : store.runs()) {
      EXPECT_EQ(r.device_index, -1) << "run " << r.id;
      EXPECT_EQ(r.device_uid, "") << "run " << r.id;
    }
  }
  RawDb upgraded(path);
  EXPECT_EQ(upgraded.shape("runs"), RawDb(fresh_path).shape("runs"));
  const Table after = upgraded.table("runs");
  ASSERT_EQ(after.size(), before.size());
  for (const auto& [id, row] : after) {
    EXPECT_EQ(row.at("device_index"), Cell{}) << "run " << id;
    EXPECT_EQ(row.at("device_uid"), (Cell{SQLITE_TEXT, ""})) << "run " << id;
    for (const auto& [column, cell] : before.at(id)) EXPECT_EQ(row.at(column), cell) << column << " of run " << id;
  }
  EXPECT_EQ(RawDb(kFixtures + "schema_v8.sqlite").shape("runs"), RawDb(fresh_path).shape("runs"));
}

// A run names the device that ran it: stored, read back, and copied by a merge; a v7 file
// opened read-only reads its runs as not recorded and is not written.
TEST(Migrations, V8RunReadsBackItsDeviceIndexAndUid) {
  TempDir tmp;
  {
    RunStore store = RunStore::open_read_only(copy_fixture(tmp, 8));
    const std::optional<RunInfo> r = store.run(3);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->device_index, 1);
    EXPECT_EQ(r->device_uid, "0000:2A:00.0");
    EXPECT_EQ(store.run(1)->device_index, -1);
  }
  const std::string written = tmp.file("written.sqlite");
  {
    RunStore store = RunStore::open(written);
    RunInfo run;
    run.backend = "cuda";
    run.device = "NVIDIA H200";
    run.device_index = 5;
    run.device_uid = "0000:9B:00.0";
    const std::int64_t id = store.begin_run(run);
    EXPECT_EQ(store.run(id)->device_index, 5);
    EXPECT_EQ(store.run(id)->device_uid, "0000:9B:00.0");
  }
  const std::string merged = tmp.file("merged.sqlite");
  merge_databases({written, copy_fixture(tmp, 8)}, merged);
  {
    RunStore store = RunStore::open_read_only(merged);
    std::map<std::string, std::pair<int, std::string>> by_uuid;
    for (const RunInfo& r : store.runs()) by_uuid[r.uuid] = {r.device_index, r.device_uid};
    EXPECT_EQ(by_uuid.at("5d0e7c41-2b9a-4f3e-8d6c-1a2b3c4d5e6f"), std::make_pair(1, std::string("0000:2A:00.0")));
    EXPECT_EQ(by_uuid.size(), 4u);
    int with_index_5 = 0;
    for (const auto& [uuid, device] : by_uuid) with_index_5 += device == std::make_pair(5, std::string("0000:9B:00.0"));
    EXPECT_EQ(with_index_5, 1);
  }
  const std::string v7 = copy_fixture(tmp, 7);
  const auto bytes = read_bytes(v7);
  {
    RunStore store = RunStore::open_read_only(v7);
    for (const RunInfo& r : store.runs()) EXPECT_EQ(r.device_index, -1);
  }
  EXPECT_EQ(read_bytes(v7), bytes);
}

TEST(Migrations, ReadOnlyOpenOfOldSchemaNamesTheUpgradeCommand) {
  TempDir tmp;
  const std::string path = copy_fixture(tmp, 2);
  try {
    RunStore::open_read_only(path);
    FAIL() << "read-only open accepted an old schema";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("tilepath db upgrade " + path), std::string::npos) << e.what();
  }
  EXPECT_EQ(RawDb(path).user_version(), 2);
}

TEST(Migrations, ReadOnlyOpenOfOldSchemaRefusesWithUpgradeHint) {
  TempDir tmp;
  const std::string path = copy_fixture(tmp, 1);
  const auto before = read_bytes(path);
  try {
    RunStore::open_read_only(path);
    FAIL() << "read-only open accepted an old schema";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("read-write"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_EQ(RawDb(path).user_version(), 1);
}

TEST(Migrations, FailedUpgradeRollsBackToOldVersion) {
  TempDir tmp;
  const std::string path = copy_fixture(tmp, 1);
  // A v1 file someone hand-edited: the second v2 ALTER collides, after the first succeeded.
  raw_exec(path, "ALTER TABLE quality ADD COLUMN distribution TEXT");
  EXPECT_THROW(RunStore::open(path), StoreError);
  RawDb db(path);
  EXPECT_EQ(db.user_version(), 1);
  for (const auto& r : db.query("PRAGMA table_info(artifacts)"))
    EXPECT_NE(r.at("name").value, "sha256") << "first v2 step was not rolled back";
  EXPECT_EQ(db.table("quality").at(1).at("metric").value, "rel_l2@gaussian");
}

}  // namespace
}  // namespace tilepath
