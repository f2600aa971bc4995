// Export of a filtered subset to a new file, merge by run UUID (idempotent),
// and merge of two files into a third without touching the inputs.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>
#include <filesystem>
#include <map>

#include "core/store/run_store.h"
#include "tests/store/store_test_util.h"

namespace tilepath {
namespace {

using namespace store_test;

struct Fixture {
  RunInfo cpu, cuda, empty_run;
  std::vector<CaseRecord> cpu_cases, cuda_cases;
};

// cpu run: 3 cases (k8v8, k16v8, k8v8 warm); cuda run: 2 cases; plus a cuda run with no cases.
Fixture fill(RunStore& store, int salt = 0) {
  Fixture f;
  f.cpu = sample_run("cpu", "cpu0");
  f.cuda = sample_run("cuda", "H200");
  f.empty_run = sample_run("cuda", "H200");
  store.begin_run(f.cpu);
  store.begin_run(f.cuda);
  store.begin_run(f.empty_run);
  for (int i = 0; i < 3; ++i) f.cpu_cases.push_back(sample_case(10 * salt + i));
  f.cpu_cases[1].op.kv = KvDtype::k16v8;
  f.cpu_cases[1].op.k_path = KPath::k16;
  f.cpu_cases[2].op.cache = CacheState::l2_warm;
  for (int i = 0; i < 2; ++i) f.cuda_cases.push_back(sample_case(10 * salt + 5 + i));
  f.cuda_cases[1].op.kv = KvDtype::k16v8;
  for (auto& c : f.cpu_cases) store.add_case(f.cpu.id, c);
  for (auto& c : f.cuda_cases) store.add_case(f.cuda.id, c);
  return f;
}

// Case records of a store keyed by (run uuid, case_key), with artifacts.
std::map<std::pair<std::string, std::string>, CaseRecord> all_cases(const RunStore& store) {
  std::map<std::pair<std::string, std::string>, CaseRecord> out;
  for (const auto& s : store.cases()) out[{s.run_uuid, s.record.case_key}] = store.load_case(s.case_id, true);
  return out;
}

TEST(ExportMerge, ExportCopiesMatchingRunsCasesAndChildRows) {
  TempDir tmp;
  RunStore store = RunStore::open(tmp.file("all.sqlite"));
  const Fixture f = fill(store);

  CaseFilter filter;
  filter.kv = "k16v8";
  const std::string out = tmp.file("k16v8.sqlite");
  store.export_subset(out, filter);
  EXPECT_FALSE(fs::exists(out + "-wal"));

  RunStore exported = RunStore::open_read_only(out);
  const auto runs = exported.runs();
  ASSERT_EQ(runs.size(), 2u) << "the run without matching cases is not exported";
  EXPECT_EQ(runs[0].uuid, f.cpu.uuid);
  EXPECT_EQ(runs[1].uuid, f.cuda.uuid);
  EXPECT_EQ(runs[0].command, f.cpu.command);
  EXPECT_EQ(runs[0].started_at, f.cpu.started_at);
  const auto cases = all_cases(exported);
  ASSERT_EQ(cases.size(), 2u);
  expect_same_case(f.cpu_cases[1], cases.at({f.cpu.uuid, f.cpu_cases[1].case_key}), true);
  expect_same_case(f.cuda_cases[1], cases.at({f.cuda.uuid, f.cuda_cases[1].case_key}), true);
  EXPECT_TRUE(exported.has_case("cpu", "cpu0", f.cpu_cases[1].case_key));
  EXPECT_FALSE(exported.has_case("cpu", "cpu0", f.cpu_cases[0].case_key));
  EXPECT_EQ(raw_count(out, "artifacts"), 4);  // two per exported case
}

// A case's matrix instruction travels with it: an export filtered by mma holds only that
// family's cases, and they read back as stored.
TEST(ExportMerge, ExportByMmaCarriesTheMatrixInstruction) {
  TempDir tmp;
  RunStore store = RunStore::open(tmp.file("all.sqlite"));
  const Fixture f = fill(store);
  CaseRecord wgmma = sample_case(42);
  wgmma.op.mma = Mma::wgmma;
  wgmma.case_key.clear();  // the store names it by its operating point
  store.add_case(f.cuda.id, wgmma);
  EXPECT_NE(wgmma.case_key.find("_wgmma"), std::string::npos) << wgmma.case_key;

  CaseFilter filter;
  filter.mma = "wgmma";
  const std::string out = tmp.file("wgmma.sqlite");
  store.export_subset(out, filter);
  const auto cases = all_cases(RunStore::open_read_only(out));
  ASSERT_EQ(cases.size(), 1u);
  expect_same_case(wgmma, cases.at({f.cuda.uuid, wgmma.case_key}), true);
  EXPECT_EQ(cases.begin()->second.op.mma, Mma::wgmma);

  filter.mma = "mma_sync";
  const std::string rest = tmp.file("mma_sync.sqlite");
  store.export_subset(rest, filter);
  for (const auto& [key, rec] : all_cases(RunStore::open_read_only(rest))) EXPECT_EQ(rec.op.mma, Mma::mma_sync);
  EXPECT_EQ(RunStore::open_read_only(rest).case_count(), 5);
}

// A v6 file (no mma column) merges with a v7 one: its cases arrive as mma_sync, the
// other's wgmma case stays wgmma, and the v6 input is not modified.
TEST(ExportMerge, MergeOfASchemaV6FileGivesItsCasesMmaSync) {
  TempDir tmp;
  const std::string v6 = tmp.file("v6.sqlite");
  fs::copy_file(std::string(TILEPATH_TEST_DATA_DIR) + "/store/fixtures/schema_v6.sqlite", v6);
  const auto v6_bytes = read_bytes(v6);
  const std::string v7 = tmp.file("v7.sqlite");
  CaseRecord wgmma = sample_case(7);
  wgmma.op.mma = Mma::wgmma;
  {
    RunStore store = RunStore::open(v7);
    RunInfo run = sample_run("sim", "h200");
    store.begin_run(run);
    store.add_case(run.id, wgmma);
  }
  const std::string out = tmp.file("merged.sqlite");
  const MergeResult r = merge_databases({v6, v7}, out);
  EXPECT_TRUE(r.conflicts.empty());
  RunStore merged = RunStore::open_read_only(out);
  int wgmma_cases = 0, mma_sync_cases = 0;
  for (const CaseSummary& c : merged.cases()) {
    if (c.record.case_key == wgmma.case_key) {
      EXPECT_EQ(c.record.op.mma, Mma::wgmma);
      ++wgmma_cases;
    } else {
      EXPECT_EQ(c.record.op.mma, Mma::mma_sync) << c.record.case_key;
      ++mma_sync_cases;
    }
  }
  EXPECT_EQ(wgmma_cases, 1);
  EXPECT_EQ(mma_sync_cases, 3) << "the v6 fixture's three cases";
  EXPECT_EQ(read_bytes(v6), v6_bytes);
}

TEST(ExportMerge, ExportByRunLevelFilterIncludesRunsWithoutCases) {
  TempDir tmp;
  RunStore store = RunStore::open(tmp.file("all.sqlite"));
  const Fixture f = fill(store);
  CaseFilter filter;
  filter.backend = "cuda";
  const std::string out = tmp.file("cuda.sqlite");
  store.export_subset(out, filter);
  RunStore exported = RunStore::open_read_only(out);
  ASSERT_EQ(exported.runs().size(), 2u);
  EXPECT_EQ(exported.runs()[1].uuid, f.empty_run.uuid);
  EXPECT_EQ(exported.case_count(), 2);
}

TEST(ExportMerge, ExportRefusesToOverwrite) {
  TempDir tmp;
  RunStore store = RunStore::open(tmp.file("all.sqlite"));
  fill(store);
  const std::string out = tmp.file("existing.sqlite");
  write_bytes(out, {'k', 'e', 'e', 'p'});
  try {
    store.export_subset(out, {});
    FAIL() << "export overwrote a file";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("already exists"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_bytes(out), (std::vector<char>{'k', 'e', 'e', 'p'}));
}

TEST(ExportMerge, ExportFromReadOnlyStore) {
  TempDir tmp;
  const std::string path = tmp.file("all.sqlite");
  {
    RunStore store = RunStore::open(path);
    fill(store);
  }
  const auto before = read_bytes(path);
  RunStore ro = RunStore::open_read_only(path);
  ro.export_subset(tmp.file("copy.sqlite"), {});
  EXPECT_EQ(RunStore::open_read_only(tmp.file("copy.sqlite")).case_count(), 5);
  EXPECT_EQ(read_bytes(path), before);
}

TEST(ExportMerge, MergeAddsRunsByUuidAndIsIdempotent) {
  TempDir tmp;
  const std::string a_path = tmp.file("a.sqlite"), b_path = tmp.file("b.sqlite");
  RunStore a = RunStore::open(a_path);
  RunStore b = RunStore::open(b_path);
  const Fixture fa = fill(a, 0);
  const Fixture fb = fill(b, 1);
  const auto b_cases = all_cases(b);

  EXPECT_EQ(a.merge_from(b_path).runs_added, 3);
  EXPECT_EQ(a.runs().size(), 6u);
  EXPECT_EQ(a.case_count(), 10);
  const auto merged = all_cases(a);
  for (const auto& [key, rec] : b_cases) {
    ASSERT_TRUE(merged.count(key)) << key.second;
    expect_same_case(rec, merged.at(key), true);
  }

  // Second merge adds nothing and duplicates nothing.
  const MergeResult again = a.merge_from(b_path);
  EXPECT_EQ(again.runs_added, 0);
  EXPECT_EQ(again.cases_added, 0);
  EXPECT_EQ(again.cases_present, 5);
  EXPECT_TRUE(again.conflicts.empty());
  EXPECT_EQ(a.runs().size(), 6u);
  EXPECT_EQ(a.case_count(), 10);
  EXPECT_EQ(raw_count(a_path, "artifacts"), 20);
  // Merging a file into itself changes nothing either.
  EXPECT_EQ(a.merge_from(a_path).runs_added, 0);
  EXPECT_EQ(a.case_count(), 10);
  // b was only read.
  EXPECT_EQ(b.case_count(), 5);
}

// Two filtered exports of one run carry its UUID: merging them unites the run's cases
// instead of keeping the first export's alone.
TEST(ExportMerge, FilteredExportsOfOneRunMergeIntoTheWholeRun) {
  TempDir tmp;
  const std::string all = tmp.file("all.sqlite");
  {
    RunStore store = RunStore::open(all);
    fill(store);
  }
  RunStore source = RunStore::open_read_only(all);
  const std::int64_t total = source.case_count();
  // The fixture's runs hold K8/V8 and K16/V8 cases: each dtype control exported on its own.
  std::vector<std::string> parts;
  for (const char* kv : {"k8v8", "k16v8"}) {
    CaseFilter f;
    f.kv = kv;
    const std::string part = tmp.file(std::string(kv) + ".sqlite");
    source.export_subset(part, f);
    const std::int64_t n = RunStore::open_read_only(part).case_count();
    ASSERT_GT(n, 0) << kv;
    ASSERT_LT(n, total) << kv;
    parts.push_back(part);
  }
  const MergeResult r = merge_databases(parts, tmp.file("merged.sqlite"));
  EXPECT_TRUE(r.conflicts.empty());
  RunStore merged = RunStore::open_read_only(tmp.file("merged.sqlite"));
  EXPECT_EQ(merged.case_count(), total);
  EXPECT_EQ(merged.runs().size(), source.runs().size() - 1) << "the run without cases is in no export";
  EXPECT_EQ(r.cases_added, total);
}

// The same (run, case key) with different results is reported, and the target's kept.
TEST(ExportMerge, AConflictingDuplicateIsReportedNotDropped) {
  TempDir tmp;
  const std::string a_path = tmp.file("a.sqlite"), b_path = tmp.file("b.sqlite");
  {
    RunStore a = RunStore::open(a_path);
    fill(a);
  }
  ASSERT_TRUE(std::filesystem::copy_file(a_path, b_path));
  {
    // b: the same runs, one case's latency changed.
    RunStore b = RunStore::open(b_path);
    sqlite3_exec(b.handle(),
                 "UPDATE measurements SET value = value * 2 WHERE name = 'latency_us' AND case_id = "
                 "(SELECT min(id) FROM cases)",
                 nullptr, nullptr, nullptr);
  }
  RunStore a = RunStore::open(a_path);
  const std::int64_t before = a.case_count();
  const MergeResult r = a.merge_from(b_path);
  EXPECT_EQ(r.runs_added, 0);
  EXPECT_EQ(r.cases_added, 0);
  EXPECT_EQ(r.cases_present, before - 1);
  ASSERT_EQ(r.conflicts.size(), 1u);
  EXPECT_NE(r.conflicts[0].find("different results"), std::string::npos) << r.conflicts[0];
  EXPECT_EQ(a.case_count(), before);
}

// A killed export or merge leaves `<out>.partial-<pid>`; the next one removes those of
// processes that are gone, and only those.
TEST(ExportMerge, PartialFilesOfKilledProcessesAreRemoved) {
  TempDir tmp;
  RunStore store = RunStore::open(tmp.file("all.sqlite"));
  fill(store);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);  // a pid that no longer exists
  const std::string out = tmp.file("out.sqlite");
  const std::string dead = out + ".partial-" + std::to_string(child),
                    alive = out + ".partial-" + std::to_string(getppid());
  for (const std::string& f : {dead, dead + "-wal", alive}) write_bytes(f, {'x'});
  store.export_subset(out, {});
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_FALSE(std::filesystem::exists(dead + "-wal"));
  EXPECT_TRUE(std::filesystem::exists(alive)) << "a live process's partial file is left alone";
  EXPECT_EQ(RunStore::open_read_only(out).case_count(), 5);
}

TEST(ExportMerge, MergeRefusesForeignFile) {
  TempDir tmp;
  RunStore a = RunStore::open(tmp.file("a.sqlite"));
  fill(a);
  const std::string foreign = tmp.file("foreign.txt");
  write_bytes(foreign, {'h', 'i'});
  EXPECT_THROW(a.merge_from(foreign), StoreError);
  EXPECT_EQ(a.case_count(), 5);
}

TEST(ExportMerge, MergeDatabasesCreatesNewFileAndLeavesInputs) {
  TempDir tmp;
  const std::string a_path = tmp.file("a.sqlite"), b_path = tmp.file("b.sqlite"), out = tmp.file("ab.sqlite");
  Fixture fa, fb;
  {
    RunStore a = RunStore::open(a_path);
    fa = fill(a, 0);
    RunStore b = RunStore::open(b_path);
    fb = fill(b, 1);
    // A run shared by both files (as after an earlier merge) appears once in the output.
    b.merge_from(a_path);
  }
  const auto a_before = read_bytes(a_path), b_before = read_bytes(b_path);
  merge_databases({a_path, b_path}, out);
  EXPECT_EQ(read_bytes(a_path), a_before);
  EXPECT_EQ(read_bytes(b_path), b_before);

  RunStore merged = RunStore::open_read_only(out);
  EXPECT_EQ(merged.runs().size(), 6u);
  EXPECT_EQ(merged.case_count(), 10);
  EXPECT_TRUE(merged.has_case("cuda", "H200", fb.cuda_cases[0].case_key));
  EXPECT_THROW(merge_databases({a_path, b_path}, out), StoreError);  // out exists now
  EXPECT_THROW(merge_databases({a_path, tmp.file("missing.sqlite")}, tmp.file("x.sqlite")), StoreError);
  EXPECT_FALSE(fs::exists(tmp.file("x.sqlite")));
}

// --replace: a later input's measurement of a (backend, device, case key) supersedes the
// earlier inputs' from other runs, child rows and all; the run that lost it says so in its
// notes. The same key on another device, and cases the later input does not hold, stay.
TEST(ExportMerge, ReplaceKeepsTheLaterInputsMeasurementOfACase) {
  TempDir tmp;
  const std::string a_path = tmp.file("a.sqlite"), b_path = tmp.file("regen.sqlite");
  Fixture fa;
  {
    RunStore a = RunStore::open(a_path);
    fa = fill(a);
  }
  RunInfo again = sample_run("cuda", "H200"), other_device = sample_run("cuda", "H100");
  CaseRecord remeasured = fa.cuda_cases[0], elsewhere = fa.cuda_cases[1], added = sample_case(40);
  remeasured.measurements[0].value = 99.0;  // latency_us
  {
    RunStore b = RunStore::open(b_path);
    b.begin_run(again);
    b.begin_run(other_device);
    b.add_case(again.id, remeasured);
    b.add_case(again.id, added);
    b.add_case(other_device.id, elsewhere);
  }

  const MergeResult united = merge_databases({a_path, b_path}, tmp.file("united.sqlite"));
  EXPECT_EQ(united.cases_replaced, 0);
  EXPECT_EQ(RunStore::open_read_only(tmp.file("united.sqlite")).case_count(), 5 + 3);

  const std::string out = tmp.file("replaced.sqlite");
  const MergeResult r = merge_databases({a_path, b_path}, out, MergeMode::replace);
  EXPECT_EQ(r.cases_replaced, 1);
  EXPECT_TRUE(r.conflicts.empty());
  RunStore merged = RunStore::open_read_only(out);
  EXPECT_EQ(merged.case_count(), 5 - 1 + 3);
  EXPECT_EQ(raw_count(out, "artifacts"), 2 * (5 - 1 + 3)) << "the replaced case's child rows go with it";
  const auto cases = all_cases(merged);
  EXPECT_FALSE(cases.count({fa.cuda.uuid, remeasured.case_key})) << "the earlier measurement is dropped";
  ASSERT_TRUE(cases.count({again.uuid, remeasured.case_key}));
  EXPECT_EQ(cases.at({again.uuid, remeasured.case_key}).measurements[0].value, 99.0);
  EXPECT_TRUE(cases.count({fa.cuda.uuid, fa.cuda_cases[1].case_key})) << "another device's case replaces nothing";
  EXPECT_TRUE(cases.count({other_device.uuid, elsewhere.case_key}));
  EXPECT_TRUE(cases.count({again.uuid, added.case_key}));
  for (const RunInfo& run : merged.runs()) {
    const bool lost = run.uuid == fa.cuda.uuid;
    EXPECT_EQ(run.notes.find("[1 case replaced by run " + again.uuid + " of regen.sqlite]") != std::string::npos, lost)
        << run.uuid << ": " << run.notes;
    if (lost) {
      EXPECT_EQ(run.notes.rfind("unit test ", 0), 0u) << "the note is appended: " << run.notes;
    }
  }
}

}  // namespace
}  // namespace tilepath
