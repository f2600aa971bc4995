// Nsight Compute's CSV output (`ncu --csv --page raw --print-units base`) read by
// core/perf/ncu_csv.h. The fixture follows the layout ncu documents for that page (header,
// units row, one row per launch, ==PROF== and application lines around it); it was
// written for this test, not captured from a profiled run.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/perf/ncu_csv.h"

using namespace tilepath::perf;

namespace {

std::string fixture() {
  std::ifstream in(std::string(TILEPATH_TEST_DATA_DIR) + "/core/fixtures/ncu-raw-k8v8.csv");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

double measured(const std::vector<NcuCsvMeasurement>& m, const std::string& name) {
  for (const NcuCsvMeasurement& x : m)
    if (x.name == name) return x.value;
  return NAN;
}

}  // namespace

TEST(NcuCsv, ReadsEveryLaunchWithItsUnitsPastNcusOwnLines) {
  const NcuCsvReport r = parse_ncu_csv(fixture(), "fixture.csv");
  ASSERT_EQ(r.launches.size(), 2u);
  const NcuCsvLaunch* main = r.first_launch_of("decode_attention_kernel");
  ASSERT_NE(main, nullptr);
  EXPECT_EQ(main->id, "0");
  EXPECT_EQ(main->find("Grid Size")->text, "(1, 4, 64)");
  EXPECT_DOUBLE_EQ(main->find("dram__bytes_read.sum")->value, 537395200);  // thousands separators
  EXPECT_EQ(main->find("gpu__time_duration.sum")->unit, "nsecond");
  EXPECT_TRUE(std::isnan(main->find("sm__inst_executed_pipe_alu.sum")->value));  // "n/a"
  EXPECT_NE(r.first_launch_of("combine_kernel"), nullptr);
  EXPECT_EQ(r.first_launch_of("no_such_kernel"), nullptr);
}

TEST(NcuCsv, StoresBytesHitRateOccupancyDurationStallsConflictsAndPipes) {
  const NcuCsvReport r = parse_ncu_csv(fixture(), "fixture.csv");
  const std::vector<NcuCsvMeasurement> m = ncu_csv_measurements(*r.first_launch_of("decode_attention_kernel"), "f");
  EXPECT_DOUBLE_EQ(measured(m, "ncu_dram_bytes_read"), 537395200);
  EXPECT_DOUBLE_EQ(measured(m, "ncu_dram_bytes_written"), 1048576);
  EXPECT_DOUBLE_EQ(measured(m, "ncu_l2_hit_rate_pct"), 3.12);
  EXPECT_DOUBLE_EQ(measured(m, "ncu_achieved_occupancy_pct"), 23.47);
  EXPECT_DOUBLE_EQ(measured(m, "ncu_duration_us"), 128.94016);
  EXPECT_DOUBLE_EQ(measured(m, "ncu_stall_long_scoreboard_cycles"), 1.80);
  EXPECT_DOUBLE_EQ(measured(m, "ncu_stall_barrier_cycles"), 0.35);
  EXPECT_DOUBLE_EQ(measured(m, "ncu_smem_bank_conflicts_st"), 12);
  EXPECT_DOUBLE_EQ(measured(m, "ncu_inst_pipe_tensor_op_hmma"), 1572864);
  EXPECT_TRUE(std::isnan(measured(m, "ncu_inst_pipe_alu")));  // n/a: left out
}

TEST(NcuCsv, RefusesWhatIsNotNcuRawCsvNamingTheProblem) {
  auto error_of = [](const std::string& text) {
    try {
      parse_ncu_csv(text, "r.csv");
    } catch (const NcuReportError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of("Section: GPU Speed Of Light\n  Duration  usecond  12\n").find("no ncu CSV header"),
            std::string::npos);
  EXPECT_NE(error_of("\"ID\",\"Kernel\"\n\"\",\"\"\n").find("no \"Kernel Name\" column"), std::string::npos);
  EXPECT_NE(error_of("\"ID\",\"Kernel Name\"\n\"0\",\"k\"\n").find("not a units row"), std::string::npos);
  EXPECT_NE(error_of("\"ID\",\"Kernel Name\"\n\"\",\"\"\n").find("no profiled kernel launch"), std::string::npos);
  EXPECT_NE(error_of("\"ID\",\"Kernel Name\",\"x\"\n\"\",\"\",\"\"\n\"0\",\"k\"\n").find("line 3 has 2 cells"),
            std::string::npos);
  // A byte metric in a unit that is not a byte unit.
  NcuCsvLaunch l;
  l.metrics["dram__bytes_read.sum"] = {"5", "sector", 5};
  EXPECT_THROW(ncu_csv_measurements(l, "r.csv"), NcuReportError);
}

TEST(NcuCsv, TheDeviceScriptRequestsTheMetricsTheParserReads) {
  std::ifstream in(std::string(TILEPATH_SOURCE_DIR) + "/backends/cuda/scripts/device_run.sh");
  std::string line, listed;
  while (std::getline(in, line))
    if (line.rfind("NCU_CSV_METRICS='", 0) == 0) listed = line.substr(17, line.size() - 18);
  EXPECT_EQ(listed, ncu_csv_metric_list());
}
