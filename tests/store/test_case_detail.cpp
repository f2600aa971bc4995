// RunStore::cases() with a CaseDetail: every case read in one pass per child table gives
// the same records as reading them case by case, and so do batches of the list; a name list
// reads only those measurements; the read indexes come with a writer and never with a reader.

#include <gtest/gtest.h>

#include <sqlite3.h>

#include <algorithm>

#include "store_test_util.h"

namespace tilepath {
namespace {

using store_test::TempDir;

// A store with two runs of three cases each (different measurements and children).
std::string make_store(const TempDir& dir) {
  const std::string path = dir.file("runs.sqlite");
  RunStore store = RunStore::open(path);
  for (int r = 0; r < 2; ++r) {
    RunInfo run = store_test::sample_run();
    store.begin_run(run);
    for (int v = 0; v < 3; ++v) {
      CaseRecord rec = store_test::sample_case(r * 3 + v);
      store.add_case(run.id, rec);
    }
  }
  return path;
}

long long index_count(const std::string& path) {
  return store_test::raw_count(path,
                               "sqlite_master WHERE type = 'index' AND name IN ('measurements_by_name', "
                               "'artifacts_listing', 'predictions_listing')");
}

TEST(CaseDetail, ReadingEveryCaseAtOnceMatchesReadingThemOneByOne) {
  TempDir dir;
  const std::string path = make_store(dir);
  const RunStore store = RunStore::open_read_only(path);
  const std::vector<CaseSummary> all = store.cases();  // one pass per child table
  ASSERT_EQ(all.size(), 6u);
  std::vector<CaseSummary> by_run;  // a filter: the rows of each case in turn
  for (const RunInfo& run : store.runs()) {
    CaseFilter f;
    f.run_id = run.id;
    for (CaseSummary& s : store.cases(f)) by_run.push_back(std::move(s));
  }
  ASSERT_EQ(by_run.size(), all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(all[i].case_id));
    EXPECT_FALSE(all[i].record.measurements.empty());
    store_test::expect_same_case(by_run[i].record, all[i].record, false);
    store_test::expect_same_case(store.load_case(all[i].case_id), all[i].record, false);
    ASSERT_EQ(all[i].artifacts.size(), by_run[i].artifacts.size());
    for (std::size_t a = 0; a < all[i].artifacts.size(); ++a) {
      EXPECT_EQ(all[i].artifacts[a].name, by_run[i].artifacts[a].name);
      EXPECT_EQ(all[i].artifacts[a].sha256, by_run[i].artifacts[a].sha256);
    }
  }
}

TEST(CaseDetail, ANameListReadsOnlyThoseMeasurementsAndSkipsWhatIsOff) {
  TempDir dir;
  const std::string path = make_store(dir);
  const RunStore store = RunStore::open_read_only(path);
  const std::vector<CaseSummary> whole = store.cases();
  ASSERT_FALSE(whole.empty());
  ASSERT_GE(whole.front().record.measurements.size(), 2u);
  const std::string kept = whole.front().record.measurements.front().name;

  CaseDetail detail;
  detail.measurements = std::vector<std::string>{kept, "no_such_measurement"};
  detail.stage_costs = false;
  detail.quality = false;
  detail.artifact_infos = false;
  detail.prediction_detail_json = false;
  CaseFilter one_run;
  one_run.run_id = whole.front().run_id;
  for (const auto& listed : {store.cases({}, detail), store.cases(one_run, detail)}) {
    ASSERT_FALSE(listed.empty());
    for (const CaseSummary& s : listed) {
      const auto& full = std::find_if(whole.begin(), whole.end(), [&](const CaseSummary& w) {
                           return w.case_id == s.case_id;
                         })->record;
      ASSERT_EQ(s.record.measurements.size(), 1u);
      EXPECT_EQ(s.record.measurements.front().name, kept);
      EXPECT_EQ(s.record.measurement(kept), full.measurement(kept));
      EXPECT_TRUE(s.record.stage_costs.empty());
      EXPECT_TRUE(s.record.quality.empty());
      EXPECT_TRUE(s.artifacts.empty());
      ASSERT_EQ(s.record.predictions.size(), full.predictions.size());
      for (const PredictionRow& p : s.record.predictions) EXPECT_EQ(p.detail_json, "");
      if (!full.predictions.empty()) {
        EXPECT_FALSE(full.predictions.front().detail_json.empty());
      }
    }
  }
}

// for_each_case_batch hands over the cases of cases() in order, a batch at a time, with
// the same child rows: with and without a filter, and batches that split a run.
TEST(CaseDetail, BatchesHoldTheCasesOfTheListInOrder) {
  TempDir dir;
  const std::string path = make_store(dir);
  const RunStore store = RunStore::open_read_only(path);
  CaseFilter second_run;
  second_run.run_id = store.runs().back().id;
  CaseDetail detail;
  detail.measurements = std::vector<std::string>{"latency_us", "bytes_moved"};
  for (const CaseFilter& filter : {CaseFilter{}, second_run})
    for (const CaseDetail& d : {CaseDetail{}, detail})
      for (std::size_t batch_size : {std::size_t{1}, std::size_t{4}, std::size_t{100}}) {
        SCOPED_TRACE("batch size " + std::to_string(batch_size) + (filter.run_id ? ", one run" : ", every run"));
        const std::vector<CaseSummary> listed = store.cases(filter, d);
        ASSERT_FALSE(listed.empty());
        std::vector<CaseSummary> batched;
        int batches = 0;
        store.for_each_case_batch(filter, d, batch_size, [&](std::vector<CaseSummary>& batch) {
          EXPECT_GE(batch.size(), 1u);
          EXPECT_LE(batch.size(), batch_size);
          ++batches;
          for (CaseSummary& s : batch) batched.push_back(std::move(s));
        });
        EXPECT_EQ(batches, static_cast<int>((listed.size() + batch_size - 1) / batch_size));
        ASSERT_EQ(batched.size(), listed.size());
        for (std::size_t i = 0; i < listed.size(); ++i) {
          SCOPED_TRACE("case " + std::to_string(listed[i].case_id));
          EXPECT_EQ(batched[i].case_id, listed[i].case_id);
          EXPECT_EQ(batched[i].run_uuid, listed[i].run_uuid);
          store_test::expect_same_case(batched[i].record, listed[i].record, false);
          EXPECT_EQ(batched[i].record.measurements.size(), listed[i].record.measurements.size());
          EXPECT_EQ(batched[i].artifacts.size(), listed[i].artifacts.size());
        }
      }
  CaseFilter none;
  none.run_id = 999;
  store.for_each_case_batch(none, {}, 4, [](std::vector<CaseSummary>&) { ADD_FAILURE() << "no case is listed"; });
}

// for_each_case_batch refills one batch's summaries with the next batch's cases: a case with
// fewer child rows, shorter texts or none of a kind after a fuller one holds only its own.
TEST(CaseDetail, ARefilledBatchHoldsOnlyItsOwnCasesRows) {
  TempDir dir;
  const std::string path = dir.file("runs.sqlite");
  {
    RunStore store = RunStore::open(path);
    RunInfo run = store_test::sample_run();
    store.begin_run(run);
    CaseRecord full = store_test::sample_case(0);
    full.measurements.push_back({"a_measurement_with_a_long_name", 7.5, "unit_with_a_long_name"});
    full.quality.push_back({"kernel_check_rel_l2", 1e-3, 6e-3, true, ""});
    store.add_case(run.id, full);
    CaseRecord sparse = store_test::sample_case(1);
    sparse.op.context_lengths.clear();
    sparse.message = "";
    sparse.kernel.kernel_name = "k";
    sparse.measurements = {{"latency_us", 2.0, "us"}};
    sparse.stage_costs.clear();
    sparse.predictions = {{0.5, "qk", "mma", 0.7, "ii_model/v2", "", std::vector<std::string>{}}};
    sparse.quality.clear();
    sparse.artifacts.clear();
    store.add_case(run.id, sparse);
    CaseRecord no_prediction = store_test::sample_case(2);
    no_prediction.predictions.clear();
    store.add_case(run.id, no_prediction);
  }
  const RunStore store = RunStore::open_read_only(path);
  const std::vector<CaseSummary> listed = store.cases();
  ASSERT_EQ(listed.size(), 3u);
  std::vector<CaseSummary> batched;
  store.for_each_case_batch({}, {}, 1, [&](std::vector<CaseSummary>& batch) {
    for (const CaseSummary& s : batch) batched.push_back(s);  // copied: the batch keeps its buffers
  });
  ASSERT_EQ(batched.size(), listed.size());
  for (std::size_t i = 0; i < listed.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(listed[i].case_id));
    EXPECT_EQ(batched[i].case_id, listed[i].case_id);
    store_test::expect_same_case(listed[i].record, batched[i].record, false);
    ASSERT_EQ(batched[i].artifacts.size(), listed[i].artifacts.size());
    for (std::size_t a = 0; a < listed[i].artifacts.size(); ++a)
      EXPECT_EQ(batched[i].artifacts[a].name, listed[i].artifacts[a].name);
  }
  EXPECT_EQ(batched[1].record.measurements.size(), 1u);
  EXPECT_TRUE(batched[1].record.stage_costs.empty());
  EXPECT_TRUE(batched[1].record.quality.empty());
  EXPECT_TRUE(batched[1].artifacts.empty());
  ASSERT_EQ(batched[1].record.predictions.size(), 1u);
  EXPECT_EQ(batched[1].record.predictions[0].unknown_stages, std::vector<std::string>{});
  EXPECT_TRUE(batched[1].record.op.context_lengths.empty());
  EXPECT_EQ(batched[1].record.kernel.kernel_name, "k");
  EXPECT_TRUE(batched[2].record.predictions.empty());
}

// Copies the cases of path (and every child row) until it holds at least `cases`, each
// copy with its own ids and case keys, in SQL.
void replicate_cases(const std::string& path, int cases) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  auto columns_except = [&](const std::string& table, const std::vector<std::string>& skip) {
    std::string out;
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, ("PRAGMA table_info(" + table + ")").c_str(), -1, &st, nullptr);
    while (sqlite3_step(st) == SQLITE_ROW) {
      const std::string name = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
      if (std::find(skip.begin(), skip.end(), name) == skip.end()) out += ", " + name;
    }
    sqlite3_finalize(st);
    return out;
  };
  const long long have = store_test::raw_count(path, "cases");
  const long long copies = (cases + have - 1) / have;
  std::string sql =
      "BEGIN; CREATE TEMP TABLE k AS WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k "
      "WHERE n < " +
      std::to_string(copies) + ") SELECT n FROM k;";
  const std::string case_cols = columns_except("cases", {"id", "case_key"});
  sql += "INSERT INTO cases(id, case_key" + case_cols + ") SELECT id + n * 1000000, case_key || '#' || n" + case_cols +
         " FROM cases, temp.k;";
  for (const std::string table : {"measurements", "stage_costs", "predictions", "quality", "artifacts"}) {
    const std::string cols = columns_except(table, {"id", "case_id"});
    sql += "INSERT INTO " + table + "(id, case_id" + cols + ") SELECT id + n * 1000000, case_id + n * 1000000" + cols +
           " FROM " + table + ", temp.k WHERE case_id < 1000000;";
  }
  sql += "COMMIT;";
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  const std::string message = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

// Above RunStore's threshold the passes run on three threads with connections of their
// own: the same records as case by case.
TEST(CaseDetail, AListReadOnThreadsMatchesReadingCaseByCase) {
  TempDir dir;
  const std::string path = make_store(dir);
  replicate_cases(path, 24000);
  const RunStore store = RunStore::open_read_only(path);
  CaseDetail detail;
  detail.quality_metrics = std::vector<std::string>{"rel_l2"};
  detail.case_texts = false;
  const std::vector<CaseSummary> all = store.cases({}, detail);
  ASSERT_GE(all.size(), 24000u);
  std::vector<CaseSummary> by_run;
  for (const RunInfo& run : store.runs()) {
    CaseFilter f;
    f.run_id = run.id;
    for (CaseSummary& s : store.cases(f, detail)) by_run.push_back(std::move(s));
  }
  std::sort(by_run.begin(), by_run.end(), [](const auto& a, const auto& b) { return a.case_id < b.case_id; });
  ASSERT_EQ(by_run.size(), all.size());
  bool some_quality = false;
  for (std::size_t i = 0; i < all.size(); i += 997) {
    SCOPED_TRACE("case " + std::to_string(all[i].case_id));
    store_test::expect_same_case(by_run[i].record, all[i].record, false);
    EXPECT_EQ(all[i].artifacts.size(), by_run[i].artifacts.size());
    EXPECT_EQ(all[i].record.finished_at, "");
    EXPECT_EQ(all[i].record.message, "");
    EXPECT_EQ(all[i].record.kernel.cubin_sha256, "");
    EXPECT_EQ(all[i].run_uuid, "");
    EXPECT_EQ(all[i].backend, by_run[i].backend);  // the run's other columns are read
    EXPECT_FALSE(all[i].backend.empty());
    for (const QualityRow& q : all[i].record.quality) EXPECT_EQ(q.metric, "rel_l2");
    some_quality = some_quality || !all[i].record.quality.empty();
  }
  EXPECT_TRUE(some_quality);
}

TEST(CaseDetail, TheReadIndexesComeWithAWriterNotWithAReader) {
  TempDir dir;
  const std::string path = make_store(dir);
  EXPECT_EQ(index_count(path), 3);
  store_test::raw_exec(
      path, "DROP INDEX measurements_by_name; DROP INDEX artifacts_listing; DROP INDEX predictions_listing;");
  const auto before = store_test::read_bytes(path);
  {
    const RunStore reader = RunStore::open_read_only(path);
    EXPECT_EQ(reader.cases().size(), 6u);  // correct without them
  }
  EXPECT_EQ(store_test::read_bytes(path), before);
  EXPECT_EQ(index_count(path), 0);
  { RunStore writer = RunStore::open(path); }
  EXPECT_EQ(index_count(path), 3);
}

// What a list read with measurement_values_only and stage-cost flags holds against the
// eager read of the same cases: the same measurement() of every listed name (a second row of
// one name, a NULL value, a name no case has), no Measurement rows and no stage-cost rows, and
// has_stage_costs where the case has them: on threads, case by case and in batches.
TEST(CaseDetail, ALazyListHoldsTheValuesAndStageCostFlagsOfTheEagerOne) {
  TempDir dir;
  const std::string path = make_store(dir);
  store_test::raw_exec(path,
                       "DELETE FROM stage_costs WHERE case_id = (SELECT min(id) + 1 FROM cases);"
                       "INSERT INTO measurements(case_id, name, value, unit) "
                       "SELECT min(id) + 2, 'latency_us', 99.5, 'us' FROM cases;");
  replicate_cases(path, 24000);
  const RunStore store = RunStore::open_read_only(path);
  CaseDetail eager;
  eager.measurements = std::vector<std::string>{"tile_interval_us", "latency_us", "not_measured", "no_such_name"};
  eager.case_texts = false;
  CaseDetail lazy = eager;
  lazy.measurement_values_only = true;
  lazy.stage_costs = false;
  lazy.stage_cost_flags = true;
  const std::vector<CaseSummary> expected = store.cases({}, eager);
  ASSERT_GE(expected.size(), 24000u);

  auto expect_same = [&](const CaseSummary& e, const CaseSummary& s) {
    SCOPED_TRACE("case " + std::to_string(s.case_id));
    ASSERT_EQ(s.case_id, e.case_id);
    EXPECT_TRUE(s.record.measurements.empty());
    EXPECT_TRUE(s.record.stage_costs.empty());
    EXPECT_EQ(s.has_stage_costs, !e.record.stage_costs.empty());
    EXPECT_EQ(e.has_stage_costs, !e.record.stage_costs.empty());
    for (const std::string& name : *eager.measurements) {
      const std::optional<double> want = e.record.measurement(name), got = s.record.measurement(name);
      ASSERT_EQ(got.has_value(), want.has_value()) << name;
      if (want) store_test::expect_same_double(*want, *got, name);
    }
    store_test::expect_same_double(s.record.measurement("latency_us").value_or(-1),
                                   e.record.measurement("latency_us").value_or(-1), "latency_us");
    EXPECT_EQ(s.record.quality.size(), e.record.quality.size());
  };
  // The cases the changes above made different, and a sample of the rest.
  auto checked = [&](std::size_t i) { return i < 6 || i % 997 == 0; };

  const std::vector<CaseSummary> threaded = store.cases({}, lazy);
  ASSERT_EQ(threaded.size(), expected.size());
  std::size_t without_costs = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (checked(i)) expect_same(expected[i], threaded[i]);
    EXPECT_EQ(threaded[i].has_stage_costs, !expected[i].record.stage_costs.empty());
    without_costs += !threaded[i].has_stage_costs;
  }
  // The second case and its copies (replicate_cases) have none.
  EXPECT_EQ(without_costs, expected.size() / 6);
  EXPECT_EQ(store.load_case(expected[2].case_id).measurements.size(), 5u);  // two latency_us rows
  for (const RunInfo& run : store.runs()) {
    CaseFilter f;
    f.run_id = run.id;
    for (const CaseSummary& s : store.cases(f, lazy)) {
      const auto e = std::lower_bound(expected.begin(), expected.end(), s.case_id,
                                      [](const CaseSummary& c, std::int64_t id) { return c.case_id < id; });
      ASSERT_NE(e, expected.end());
      if (checked(static_cast<std::size_t>(e - expected.begin()))) expect_same(*e, s);
    }
  }
  std::size_t at = 0;
  store.for_each_case_batch({}, lazy, 5000, [&](std::vector<CaseSummary>& batch) {
    for (const CaseSummary& s : batch) {
      ASSERT_LT(at, expected.size());
      if (checked(at)) expect_same(expected[at], s);
      ++at;
    }
  });
  EXPECT_EQ(at, expected.size());

  // Neither the rows nor their flags: no case says it has stage costs.
  CaseDetail neither = lazy;
  neither.stage_cost_flags = false;
  for (const CaseSummary& s : store.cases({}, neither)) ASSERT_FALSE(s.has_stage_costs);
}

}  // namespace
}  // namespace tilepath
