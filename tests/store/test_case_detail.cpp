// RunStore::cases() with a CaseDetail: every case read in one pass per child table gives
// the same records as reading them case by case; a name list reads only those
// measurements; the read indexes come with a writer and never with a reader.

#include <gtest/gtest.h>

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
                               "'artifacts_listing')");
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
      if (!full.predictions.empty()) EXPECT_FALSE(full.predictions.front().detail_json.empty());
    }
  }
}

TEST(CaseDetail, TheReadIndexesComeWithAWriterNotWithAReader) {
  TempDir dir;
  const std::string path = make_store(dir);
  EXPECT_EQ(index_count(path), 2);
  store_test::raw_exec(path, "DROP INDEX measurements_by_name; DROP INDEX artifacts_listing;");
  const auto before = store_test::read_bytes(path);
  {
    const RunStore reader = RunStore::open_read_only(path);
    EXPECT_EQ(reader.cases().size(), 6u);  // correct without them
  }
  EXPECT_EQ(store_test::read_bytes(path), before);
  EXPECT_EQ(index_count(path), 0);
  { RunStore writer = RunStore::open(path); }
  EXPECT_EQ(index_count(path), 2);
}

}  // namespace
}  // namespace tilepath
