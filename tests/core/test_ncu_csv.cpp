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

std::string fixture(const std::string& name = "ncu-raw-k8v8.csv") {
  std::ifstream in(std::string(TILEPATH_TEST_DATA_DIR) + "/core/fixtures/" + name);
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
  EXPECT_EQ(r.tilepath_case, "k8v8/fp8_qk/k_only B=64 S=4096 Hq/Hk=32/8 D=128 P=16 hbm_cold");
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

TEST(NcuCsv, TheMainKernelIsEitherFamilysDecodeKernelNeverTheCombineOrTheReadKernel) {
  // The fixture's launches renamed: the read kernel first, then a wgmma main kernel.
  std::string text = fixture();
  const auto rename = [&text](const std::string& from, const std::string& to) {
    const std::size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  };
  rename("tilepath::cuda::kernels::decode_attention_kernel<", "tilepath::cuda::stream_read_kernel<");
  rename("combine_kernel(", "tilepath::cuda::kernels::decode_wgmma_kernel<tilepath::cuda::kernels::WgmmaTraits<>>(");
  const NcuCsvReport r = parse_ncu_csv(text, "wgmma.csv");
  const NcuCsvLaunch* main = r.first_main_kernel_launch();
  ASSERT_NE(main, nullptr);
  EXPECT_EQ(main->id, "1");
  EXPECT_DOUBLE_EQ(main->find("dram__bytes_read.sum")->value, 2097152);

  EXPECT_TRUE(is_main_decode_kernel("void tilepath::cuda::kernels::decode_attention_kernel<T>(KernelParams)"));
  EXPECT_TRUE(is_main_decode_kernel("decode_wgmma_kernel"));
  EXPECT_FALSE(is_main_decode_kernel("combine_kernel(const float *, const float *, int, int, int, int)"));
  EXPECT_FALSE(is_main_decode_kernel("stream_read_kernel"));
  EXPECT_EQ(ncu_main_kernel_filter(), "regex:decode_attention_kernel|decode_wgmma_kernel");

  // Only a combine launch: no main kernel.
  rename("tilepath::cuda::kernels::decode_wgmma_kernel<", "combine_kernel<");
  EXPECT_EQ(parse_ncu_csv(text, "combine.csv").first_main_kernel_launch(), nullptr);
}

// A capture of ncu on the H200 (bench/results/wgmma-start-chain/call6/, the stall ratios of the
// wgmma fp8_qk/k_only kernel at B=64, S=4096): ncu names the kernel by its short template form.
TEST(NcuCsv, ReadsACapturedWgmmaLaunch) {
  const NcuCsvReport r = parse_ncu_csv(fixture("ncu-raw-wgmma-stalls-b64-s4096.csv"), "wgmma.csv");
  ASSERT_EQ(r.launches.size(), 1u);
  const NcuCsvLaunch* main = r.first_main_kernel_launch();
  ASSERT_NE(main, nullptr);
  EXPECT_EQ(main->kernel, "void decode_wgmma_kernel<WgmmaTraits<2, 2, 128>>(WgmmaParams)");
  EXPECT_EQ(r.first_launch_of("decode_attention_kernel"), nullptr);
  EXPECT_EQ(r.tilepath_case, "k8v8/fp8_qk/k_only/wgmma B=64 S=4096 Hq/Hk=32/8 D=128 P=16 hbm_cold");
  const std::vector<NcuCsvMeasurement> m = ncu_csv_measurements(*main, "wgmma.csv");
  EXPECT_DOUBLE_EQ(measured(m, "ncu_duration_us"), 130.304);
  EXPECT_DOUBLE_EQ(measured(m, "ncu_stall_long_scoreboard_cycles"), 8.4);
  EXPECT_TRUE(std::isnan(measured(m, "ncu_dram_bytes_read")));  // not among this capture's metrics
}

// The `tilepath run` summary ncu's output carries names the profiled kernel's cubin; a line that
// is not a whole sha256 names none.
TEST(NcuCsv, ReadsTheCubinLineOfTheRunSummary) {
  const std::string cubin = "9f79174b88db49f4b59aeeecf1f84d3c6af6c3bb3b741802f37813c0a2d99ee0";
  const std::string text = fixture();
  const std::string case_line = "case            k8v8/fp8_qk/k_only B=64 S=4096 Hq/Hk=32/8 D=128 P=16 hbm_cold\n";
  ASSERT_NE(text.find(case_line), std::string::npos);
  EXPECT_EQ(parse_ncu_csv(text, "f.csv").tilepath_cubin, "") << "the fixture names no cubin";
  const std::string with_cubin =
      std::string(text).insert(text.find(case_line) + case_line.size(), "cubin           " + cubin + "\n");
  EXPECT_EQ(parse_ncu_csv(with_cubin, "f.csv").tilepath_cubin, cubin);
  const std::string short_hash =
      std::string(text).insert(text.find(case_line) + case_line.size(), "cubin           9f79174b88db\n");
  EXPECT_EQ(parse_ncu_csv(short_hash, "f.csv").tilepath_cubin, "");
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

TEST(NcuCsv, TheDeviceScriptRequestsTheMetricsAndKernelsTheParserReads) {
  std::ifstream in(std::string(TILEPATH_SOURCE_DIR) + "/backends/cuda/scripts/device_run.sh");
  std::string line, listed, kernels;
  while (std::getline(in, line)) {
    if (line.rfind("NCU_CSV_METRICS='", 0) == 0) listed = line.substr(17, line.size() - 18);
    if (line.rfind("NCU_MAIN_KERNELS='", 0) == 0) kernels = line.substr(18, line.size() - 19);
  }
  EXPECT_EQ(listed, ncu_csv_metric_list());
  EXPECT_EQ("regex:" + kernels, ncu_main_kernel_filter());
}
