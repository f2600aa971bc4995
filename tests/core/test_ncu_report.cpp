// The Nsight Compute text-report parser against reports from the lent H200 (tests/core/fixtures).

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "core/perf/ncu_report.h"

namespace tilepath::perf {
namespace {

std::string fixture(const std::string& name) {
  const std::string path = std::string(TILEPATH_TEST_DATA_DIR) + "/core/fixtures/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The text with every line containing `needle` removed.
std::string without_lines(const std::string& text, const std::string& needle) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size() - 1;
    std::string line = text.substr(start, end - start + 1);
    if (line.find(needle) == std::string::npos) out += line;
    start = end + 1;
  }
  return out;
}

// A row of a section table laid out as ncu prints it (name column `name_width` wide,
// unit 11, value 12, right-aligned).
std::string row(const std::string& name, std::size_t name_width, const std::string& unit, const std::string& value) {
  auto right = [](const std::string& s, std::size_t w) {
    return std::string(w > s.size() ? w - s.size() : 0, ' ') + s;
  };
  return "    " + name + std::string(name_width - name.size(), ' ') + " " + right(unit, 11) + " " + right(value, 12);
}
constexpr std::size_t kSolWidth = 23, kOccupancyWidth = 31;

std::string replace_first(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(NcuReport, ReadsTheSectionsOfTheH200Report) {
  const NcuReport r = parse_ncu_report(fixture("ncu-h200-k8v8-fp8_qk-k_only.txt"), "k8v8.txt");
  EXPECT_EQ(r.kernel, "void decode_attention_kernel<DecodeTraits<2, 2, 0, 128, 0, (int)-1>>(KernelParams)");
  EXPECT_EQ(r.tilepath_case, "k8v8/fp8_qk/k_only B=64 S=4096 Hq/Hk=32/8 D=128 P=16 hbm_cold");
  EXPECT_DOUBLE_EQ(r.dram_throughput_pct(), 84.32);
  EXPECT_DOUBLE_EQ(r.duration_us(), 133.06);
  EXPECT_DOUBLE_EQ(r.sm_frequency_ghz(), 1.74);
  EXPECT_DOUBLE_EQ(r.achieved_occupancy_pct(), 11.79);
  EXPECT_TRUE(r.stalls.empty()) << "this report was profiled without the per-reason metrics";
  EXPECT_TRUE(r.top_stalls(3).empty());

  // Rows keep their section, unit and printed text; thousands separators are removed.
  const NcuMetricRow* cycles = r.find("Elapsed Cycles");
  ASSERT_NE(cycles, nullptr);
  EXPECT_EQ(cycles->section, "GPU Speed Of Light Throughput");
  EXPECT_EQ(cycles->unit, "cycle");
  EXPECT_EQ(cycles->text, "232,484");
  EXPECT_DOUBLE_EQ(cycles->value, 232484.0);
  const NcuMetricRow* theoretical = r.find("Theoretical Occupancy");
  ASSERT_NE(theoretical, nullptr);
  EXPECT_EQ(theoretical->section, "Occupancy");
  EXPECT_DOUBLE_EQ(theoretical->value, 12.5);
  // A unitless row, a text value and a name with a '#'.
  const NcuMetricRow* block = r.find("Block Size");
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(block->unit, "");
  EXPECT_DOUBLE_EQ(block->value, 64);
  const NcuMetricRow* policy = r.find("Cluster Scheduling Policy");
  ASSERT_NE(policy, nullptr);
  EXPECT_EQ(policy->text, "PolicySpread");
  EXPECT_TRUE(std::isnan(policy->value));
  const NcuMetricRow* no_data = r.find("Local Memory Spilling Request Overhead");
  ASSERT_NE(no_data, nullptr);
  EXPECT_EQ(no_data->text, "no data");
  const NcuMetricRow* sms = r.find("# SMs");
  ASSERT_NE(sms, nullptr);
  EXPECT_DOUBLE_EQ(sms->value, 132);
  // "Memory Throughput" is printed twice (%, Tbyte/s); find() gives the first (SpeedOfLight).
  ASSERT_NE(r.find("Memory Throughput"), nullptr);
  EXPECT_EQ(r.find("Memory Throughput")->unit, "%");
  // The rule text blocks (OPT/INF/WRN) are not rows.
  EXPECT_EQ(r.find("OPT"), nullptr);
}

TEST(NcuReport, ReadsTheCubinLineOfTheRunSummary) {
  const std::string cubin = "33918b41e9788fe03ce5e1816df2b7a22a318d01e724bdc74f4ecfc37eaee0ab";
  const std::string text = fixture("ncu-h200-k8v8-fp8_qk-k_only.txt");
  EXPECT_EQ(parse_ncu_report(text, "k8v8.txt").tilepath_cubin, "");
  const std::string case_line = "case            k8v8/fp8_qk/k_only B=64 S=4096 Hq/Hk=32/8 D=128 P=16 hbm_cold";
  const NcuReport r =
      parse_ncu_report(replace_first(text, case_line, case_line + "\ncubin           " + cubin), "k8v8.txt");
  EXPECT_EQ(r.tilepath_cubin, cubin);
  EXPECT_EQ(r.tilepath_case, "k8v8/fp8_qk/k_only B=64 S=4096 Hq/Hk=32/8 D=128 P=16 hbm_cold");
  EXPECT_DOUBLE_EQ(r.duration_us(), 133.06) << "the line is not read as a metric row";
}

TEST(NcuReport, ReadsThePerReasonStallMetrics) {
  const NcuReport r = parse_ncu_report(fixture("ncu-h200-k8v8-fp8_qk-k_only-stalls.txt"), "stalls.txt");
  ASSERT_EQ(r.stalls.size(), 18u);
  EXPECT_EQ(r.stalls.front().reason, "barrier");
  EXPECT_DOUBLE_EQ(r.stalls.front().cycles_per_issue, 0.31);
  double sum = 0;
  for (const NcuStall& s : r.stalls) sum += s.cycles_per_issue;
  // The reasons add up to the warp cycles per issued instruction of the same report.
  EXPECT_NEAR(sum, r.find("Warp Cycles Per Issued Instruction")->value, 1e-9);
  const auto top = r.top_stalls(3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].reason, "long_scoreboard");
  EXPECT_DOUBLE_EQ(top[0].cycles_per_issue, 1.78);
  EXPECT_EQ(top[1].reason, "barrier");
  EXPECT_EQ(top[2].reason, "wait");  // `selected` (1.00) is the issue itself, not a stall
  // The other sections are read as before.
  EXPECT_DOUBLE_EQ(r.achieved_occupancy_pct(), 11.79);
  EXPECT_EQ(r.find("smsp__average_warps_issue_stalled_wait_per_issue_active.ratio")->section,
            "Command line profiler metrics");
}

TEST(NcuReport, ConvertsDurationAndClockUnits) {
  std::string text = fixture("ncu-h200-k8v8-fp8_qk-k_only.txt");
  text = replace_first(text, row("Duration", kSolWidth, "us", "133.06"), row("Duration", kSolWidth, "msecond", "0.13"));
  text = replace_first(text, row("SM Frequency", kSolWidth, "Ghz", "1.74"),
                       row("SM Frequency", kSolWidth, "Mhz", "1,740.00"));
  const NcuReport r = parse_ncu_report(text, "units.txt");
  EXPECT_DOUBLE_EQ(r.duration_us(), 130.0);
  EXPECT_DOUBLE_EQ(r.sm_frequency_ghz(), 1.74);
}

TEST(NcuReport, MissingRowsAreNamedWithTheirSection) {
  const std::string text = fixture("ncu-h200-k8v8-fp8_qk-k_only.txt");
  const NcuReport r = parse_ncu_report(without_lines(text, "Achieved Occupancy"), "x.txt");
  try {
    r.achieved_occupancy_pct();
    FAIL() << "no error";
  } catch (const NcuReportError& e) {
    EXPECT_NE(std::string(e.what()).find("'Achieved Occupancy'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Occupancy"), std::string::npos) << e.what();
  }
  const NcuReport no_dram = parse_ncu_report(without_lines(text, "DRAM Throughput"), "x.txt");
  EXPECT_THROW(no_dram.dram_throughput_pct(), NcuReportError);
  const NcuReport odd = parse_ncu_report(replace_first(text, row("Duration", kSolWidth, "us", "133.06"),
                                                       row("Duration", kSolWidth, "fortnight", "133.06")),
                                         "x.txt");
  try {
    odd.duration_us();
    FAIL() << "no error";
  } catch (const NcuReportError& e) {
    EXPECT_NE(std::string(e.what()).find("fortnight"), std::string::npos) << e.what();
  }
  const NcuReport nan = parse_ncu_report(replace_first(text, row("Achieved Occupancy", kOccupancyWidth, "%", "11.79"),
                                                       row("Achieved Occupancy", kOccupancyWidth, "%", "n/a")),
                                         "x.txt");
  EXPECT_THROW(nan.achieved_occupancy_pct(), NcuReportError);
}

TEST(NcuReport, RefusesReportsWithoutOrWithSeveralLaunches) {
  const std::string text = fixture("ncu-h200-k8v8-fp8_qk-k_only.txt");
  try {
    parse_ncu_report("==PROF== No kernels were profiled.\n", "empty.txt");
    FAIL() << "no error";
  } catch (const NcuReportError& e) {
    EXPECT_NE(std::string(e.what()).find("empty.txt"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no profiled kernel launch"), std::string::npos) << e.what();
  }
  const std::size_t at = text.find("  void decode_attention_kernel");
  ASSERT_NE(at, std::string::npos);
  const std::string twice = text + text.substr(at);
  try {
    parse_ncu_report(twice, "twice.txt");
    FAIL() << "no error";
  } catch (const NcuReportError& e) {
    EXPECT_NE(std::string(e.what()).find("2 profiled kernel launches"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_ncu_report("just some text\nwithout tables\n", "text.txt"), NcuReportError);
}

}  // namespace
}  // namespace tilepath::perf
