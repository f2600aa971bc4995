// Adding to a stored case (`tilepath attach`): artifacts, measurements and the achieved
// occupancy land in one transaction; a name already there is replaced; listings name
// the artifacts without loading their bytes.
#include <gtest/gtest.h>

#include "core/store/run_store.h"
#include "tests/store/store_test_util.h"

namespace tilepath {
namespace {

using namespace store_test;

std::vector<std::uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

// A store with one case (sample_case: two artifacts, four measurements, occupancy 0.2375).
struct OneCase {
  TempDir tmp;
  std::string path = tmp.file("s.sqlite");
  std::int64_t case_id = 0;
  OneCase() {
    RunStore store = RunStore::open(path);
    RunInfo run = sample_run();
    store.begin_run(run);
    CaseRecord rec = sample_case();
    case_id = store.add_case(run.id, rec);
  }
};

TEST(AnnotateCase, AddsArtifactMeasurementsAndOccupancyTogether) {
  OneCase db;
  RunStore store = RunStore::open(db.path);
  CaseAnnotation a;
  a.artifacts = {{"ncu.txt", "text/plain", bytes("Section: Occupancy\n")}};
  a.measurements = {{"ncu_dram_throughput_pct", 84.32, "%"}, {"ncu_stall_long_scoreboard_cycles", 1.78, "cycle"}};
  a.occupancy_achieved = 0.1179;
  AnnotationResult r = store.annotate_case(db.case_id, a);
  EXPECT_TRUE(r.replaced_artifacts.empty());
  EXPECT_TRUE(r.replaced_measurements.empty());

  CaseRecord rec = store.load_case(db.case_id, /*with_artifacts=*/true);
  EXPECT_DOUBLE_EQ(rec.kernel.occupancy_achieved, 0.1179);
  EXPECT_DOUBLE_EQ(rec.kernel.occupancy_theoretical, 0.25) << "the other kernel columns stay";
  EXPECT_EQ(rec.measurement("ncu_dram_throughput_pct"), 84.32);
  EXPECT_EQ(rec.measurement("ncu_stall_long_scoreboard_cycles"), 1.78);
  EXPECT_EQ(rec.measurement("latency_us"), 123.5) << "measurements of other names stay";
  ASSERT_EQ(rec.artifacts.size(), 3u);
  EXPECT_EQ(rec.artifacts.back().name, "ncu.txt");
  EXPECT_EQ(rec.artifacts.back().data, bytes("Section: Occupancy\n"));

  // Listings name the artifacts with size and checksum, without their bytes.
  std::vector<ArtifactInfo> infos = store.artifact_infos(db.case_id);
  ASSERT_EQ(infos.size(), 3u);
  EXPECT_EQ(infos[0].name, "ncu.csv");
  EXPECT_EQ(infos[1].name, "empty.bin");
  EXPECT_EQ(infos[1].size, 0);
  EXPECT_EQ(infos[2].name, "ncu.txt");
  EXPECT_EQ(infos[2].mime, "text/plain");
  EXPECT_EQ(infos[2].size, 19);
  EXPECT_EQ(infos[2].sha256.size(), 64u);
  std::vector<CaseSummary> listed = store.cases();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_TRUE(listed[0].record.artifacts.empty()) << "cases() loads no artifact bytes";
  ASSERT_EQ(listed[0].artifacts.size(), 3u);
  EXPECT_EQ(listed[0].artifacts[2].name, "ncu.txt");
  EXPECT_EQ(listed[0].artifacts[2].sha256, infos[2].sha256);
}

TEST(AnnotateCase, TheSameNameReplacesTheArtifactAndTheMeasurement) {
  OneCase db;
  RunStore store = RunStore::open(db.path);
  store.add_artifact(db.case_id, {"ncu.txt", "text/plain", bytes("first")});
  CaseAnnotation a;
  a.artifacts = {{"ncu.txt", "text/plain", bytes("second report")}};
  a.measurements = {{"latency_us", 99.0, "us"}};
  AnnotationResult r = store.annotate_case(db.case_id, a);
  ASSERT_EQ(r.replaced_artifacts.size(), 1u);
  EXPECT_EQ(r.replaced_artifacts[0].name, "ncu.txt");
  EXPECT_EQ(r.replaced_artifacts[0].size, 5);
  ASSERT_EQ(r.replaced_measurements.size(), 1u);
  EXPECT_EQ(r.replaced_measurements[0], "latency_us");

  CaseRecord rec = store.load_case(db.case_id, true);
  int named = 0, latency_rows = 0;
  for (const Artifact& art : rec.artifacts)
    if (art.name == "ncu.txt") {
      ++named;
      EXPECT_EQ(art.data, bytes("second report"));
    }
  for (const Measurement& m : rec.measurements) latency_rows += m.name == "latency_us";
  EXPECT_EQ(named, 1);
  EXPECT_EQ(latency_rows, 1);
  EXPECT_EQ(rec.measurement("latency_us"), 99.0);
  EXPECT_DOUBLE_EQ(rec.kernel.occupancy_achieved, 0.2375) << "unset occupancy leaves the column";
}

TEST(AnnotateCase, RefusalsWriteNothing) {
  OneCase db;
  {
    RunStore store = RunStore::open(db.path);
    CaseAnnotation a;
    a.artifacts = {{"ncu.txt", "text/plain", bytes("x")}};
    a.measurements = {{"ncu_duration_us", 133.06, "us"}};
    a.occupancy_achieved = 11.79;  // a percentage where a fraction belongs
    try {
      store.annotate_case(db.case_id, a);
      FAIL() << "no error";
    } catch (const StoreError& e) {
      EXPECT_NE(std::string(e.what()).find("occupancy_achieved"), std::string::npos) << e.what();
    }
    EXPECT_THROW(store.add_artifact(db.case_id + 100, {"ncu.txt", "text/plain", bytes("x")}), StoreError);
    EXPECT_THROW(store.add_artifact(db.case_id, {"", "text/plain", bytes("x")}), StoreError);
    CaseAnnotation nameless;
    nameless.artifacts = {{"fine.txt", "text/plain", bytes("x")}};
    nameless.measurements = {{"", 1.0, ""}};
    EXPECT_THROW(store.annotate_case(db.case_id, nameless), StoreError);
  }
  EXPECT_EQ(raw_count(db.path, "artifacts"), 2);
  EXPECT_EQ(raw_count(db.path, "measurements"), 4);
  RunStore check = RunStore::open_read_only(db.path);
  EXPECT_DOUBLE_EQ(check.load_case(db.case_id).kernel.occupancy_achieved, 0.2375);
}

TEST(AnnotateCase, ArtifactsAddedLaterTravelWithExport) {
  OneCase db;
  {
    RunStore store = RunStore::open(db.path);
    store.add_artifact(db.case_id, {"ncu.txt", "text/plain", bytes("raw ncu text")});
  }
  const std::string out = db.tmp.file("subset.sqlite");
  RunStore::open_read_only(db.path).export_subset(out, {});
  RunStore exported = RunStore::open_read_only(out);
  std::vector<CaseSummary> cases = exported.cases();
  ASSERT_EQ(cases.size(), 1u);
  ASSERT_EQ(cases[0].artifacts.size(), 3u);
  EXPECT_EQ(cases[0].artifacts[2].name, "ncu.txt");
  EXPECT_EQ(exported.load_case(cases[0].case_id, true).artifacts[2].data, bytes("raw ncu text"));
}

}  // namespace
}  // namespace tilepath
