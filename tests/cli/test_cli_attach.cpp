// `tilepath attach` end to end: an ncu text report onto the case a cpu-backend run stored,
// checked through RunStore and `report --json`; refusals leave the database byte-identical.

#include <gtest/gtest.h>

#include <filesystem>

#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include "cli_process.h"
#include "core/store/run_store.h"

namespace tilepath::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<std::string> kShape = {"--batch",    "2", "--context",  "300", "--q-heads",   "8",
                                         "--kv-heads", "2", "--head-dim", "64",  "--page-size", "16"};

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::string fixture(const std::string& name) {
  return read_file(std::string(TILEPATH_TEST_DATA_DIR) + "/core/fixtures/" + name);
}

// The report without its `tilepath run` summary line, so it fits any case.
std::string without_case_line(const std::string& text) {
  std::string out;
  for (const std::string& line : lines(text))
    if (line.rfind("case ", 0) != 0) out += line + "\n";
  return out;
}

class AttachTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir("attach");
    db_ = path("runs.sqlite");
    CliResult r = run_cli(concat(
        {"run", "--backend", "cpu", "--kv", "k8v8", "--repeats", "2", "--no-ablations", "--seed", "3", "--db", db_},
        kShape));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    RunStore store = RunStore::open_read_only(db_);
    ASSERT_EQ(store.case_count(), 1);
    case_id_ = store.cases().front().case_id;
    report_ = path("ncu-k8v8.txt");
    write_file(report_, without_case_line(fixture("ncu-h200-k8v8-fp8_qk-k_only-stalls.txt")));
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  CliResult attach(std::vector<std::string> extra) const {
    return run_cli(concat(concat({"attach", "--db", db_, "--backend", "cpu", "--kv", "k8v8"}, kShape), extra));
  }

  // One line on stderr naming `must_mention`, a non-zero exit, and the database as it was.
  void expect_refused(const CliResult& r, const std::string& must_mention, const std::string& before) const {
    EXPECT_NE(r.exit_code, 0) << r.out;
    auto err = lines(r.err);
    ASSERT_EQ(err.size(), 1u) << "stderr:\n" << r.err;
    EXPECT_NE(err[0].find("error"), std::string::npos) << err[0];
    EXPECT_NE(err[0].find(must_mention), std::string::npos) << err[0];
    EXPECT_EQ(read_file(db_), before) << "the database changed";
  }

  std::string dir_, db_, report_;
  std::int64_t case_id_ = 0;
};

TEST_F(AttachTest, NcuReportLandsOnTheCaseWithItsNumbers) {
  CliResult r = attach({"--ncu", "--file", report_});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("attached  ncu-k8v8.txt"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("long_scoreboard 1.78"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("replaced"), std::string::npos) << r.out;

  RunStore store = RunStore::open_read_only(db_);
  CaseRecord rec = store.load_case(case_id_, /*with_artifacts=*/true);
  const std::string bytes = read_file(report_);
  int found = 0;
  for (const Artifact& a : rec.artifacts)
    if (a.name == "ncu-k8v8.txt") {
      ++found;
      EXPECT_EQ(a.mime, "text/plain");
      EXPECT_EQ(std::string(a.data.begin(), a.data.end()), bytes);
    }
  EXPECT_EQ(found, 1);
  EXPECT_DOUBLE_EQ(rec.kernel.occupancy_achieved, 0.1179);  // 11.79 % as a fraction
  EXPECT_EQ(rec.measurement("ncu_achieved_occupancy_pct"), 11.79);
  EXPECT_EQ(rec.measurement("ncu_dram_throughput_pct"), 84.32);
  EXPECT_EQ(rec.measurement("ncu_duration_us"), 133.06);
  EXPECT_EQ(rec.measurement("ncu_sm_frequency_ghz"), 1.74);
  EXPECT_EQ(rec.measurement("ncu_stall_long_scoreboard_cycles"), 1.78);
  EXPECT_EQ(rec.measurement("ncu_stall_selected_cycles"), 1.0);
  EXPECT_TRUE(rec.measurement("latency_us")) << "the run's own measurements stay";

  // `report --json` names the artifacts and shows the achieved occupancy.
  CliResult rep = run_cli({"report", "--db", db_, "--json"});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  json rows = json::parse(rep.out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NE(rows[0]["artifacts"].get<std::string>().find("ncu-k8v8.txt (" + std::to_string(bytes.size()) + " B)"),
            std::string::npos)
      << rows[0]["artifacts"];
  EXPECT_EQ(rows[0]["occupancy_achieved"], "0.1179");

  // Attaching the same name again replaces it (and says so).
  write_file(report_, read_file(report_) + "\n");
  CliResult again = attach({"--ncu", "--file", report_, "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  json j = json::parse(again.out);
  EXPECT_EQ(j["case_id"], case_id_);
  EXPECT_EQ(j["artifact"]["size"], bytes.size() + 1);
  ASSERT_EQ(j["replaced_artifacts"].size(), 1u);
  EXPECT_EQ(j["replaced_artifacts"][0]["size"], bytes.size());
  EXPECT_DOUBLE_EQ(j["occupancy_achieved"].get<double>(), 0.1179);
  CliResult text = attach({"--ncu", "--file", report_});
  EXPECT_NE(text.out.find("replaced  the artifact 'ncu-k8v8.txt'"), std::string::npos) << text.out;
  RunStore after = RunStore::open_read_only(db_);
  int named = 0, occupancy_rows = 0;
  CaseRecord rec2 = after.load_case(case_id_, true);
  for (const Artifact& a : rec2.artifacts) named += a.name == "ncu-k8v8.txt";
  for (const Measurement& m : rec2.measurements) occupancy_rows += m.name == "ncu_achieved_occupancy_pct";
  EXPECT_EQ(named, 1);
  EXPECT_EQ(occupancy_rows, 1);
}

TEST_F(AttachTest, NcuCsvLandsOnTheCaseWithTheMainKernelsNumbers) {
  const std::string csv = path("ncu.csv");
  write_file(csv, without_case_line(fixture("ncu-raw-k8v8.csv")));
  CliResult r = attach({"--ncu-csv", "--file", csv, "--mime", "text/csv"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("10 measurements of the main kernel's launch stored as ncu_*"), std::string::npos) << r.out;
  RunStore store = RunStore::open_read_only(db_);
  CaseRecord rec = store.load_case(case_id_, /*with_artifacts=*/true);
  EXPECT_EQ(rec.measurement("ncu_dram_bytes_read"), 537395200.0);  // the main kernel's, not combine's
  EXPECT_EQ(rec.measurement("ncu_l2_hit_rate_pct"), 3.12);
  EXPECT_DOUBLE_EQ(rec.kernel.occupancy_achieved, 0.2347);
  int csv_artifacts = 0;
  for (const Artifact& a : rec.artifacts)
    if (a.name == "ncu.csv") {
      ++csv_artifacts;
      EXPECT_EQ(a.mime, "text/csv");
    }
  EXPECT_EQ(csv_artifacts, 1);
  // ncu's text output is not its CSV: refused, naming the file, the database untouched.
  const std::string before = read_file(db_);
  expect_refused(attach({"--ncu-csv", "--file", report_}), "no ncu CSV header", before);
  expect_refused(attach({"--ncu-csv", "--ncu", "--file", csv}), "give one", before);
  // A CSV of the combine alone (ncu's filter missed both main kernels): refused, naming the filter.
  // A CSV whose `tilepath run` summary names another case (B=64, S=4096): refused, naming both.
  write_file(path("other.csv"), fixture("ncu-raw-k8v8.csv"));
  expect_refused(
      attach({"--ncu-csv", "--file", path("other.csv")}),
      "is the ncu report of case 'k8v8/fp8_qk/k_only B=64 S=4096 Hq/Hk=32/8 D=128 P=16 hbm_cold', not of case", before);
  std::string combine_only = without_case_line(fixture("ncu-raw-k8v8.csv"));
  const std::string main_kernel = "tilepath::cuda::kernels::decode_attention_kernel<";
  combine_only.replace(combine_only.find(main_kernel), main_kernel.size(), "combine_kernel<");
  write_file(path("combine.csv"), combine_only);
  expect_refused(attach({"--ncu-csv", "--file", path("combine.csv")}),
                 "no launch of a main decode kernel among its 2 (profile with --kernel-name "
                 "regex:decode_attention_kernel|decode_wgmma_kernel)",
                 before);
}

// A report whose `tilepath run` summary names the profiled kernel's cubin lands only on a case
// that the same cubin measured; one that names none is taken, and says so.
TEST_F(AttachTest, NcuCsvOfAnotherCubinIsRefused) {
  const std::string case_cubin(64, 'a'), other_cubin(64, 'b');
  {
    // The cpu backend records no cubin: give the case one, as a cuda case has.
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db_.c_str(), &raw), SQLITE_OK);
    const std::string sql =
        "UPDATE cases SET cubin_sha256 = '" + case_cubin + "' WHERE id = " + std::to_string(case_id_);
    EXPECT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(raw);
    sqlite3_close(raw);
  }
  const std::string csv = without_case_line(fixture("ncu-raw-k8v8.csv"));
  write_file(path("other-build.csv"), "cubin           " + other_cubin + "\n" + csv);
  const std::string before = read_file(db_);
  expect_refused(attach({"--ncu-csv", "--file", path("other-build.csv")}),
                 "profiled the cubin bbbbbbbbbbbb..., not case " + std::to_string(case_id_) +
                     "'s aaaaaaaaaaaa...: another build of the kernel",
                 before);

  write_file(path("same-build.csv"), "cubin           " + case_cubin + "\n" + csv);
  CliResult r = attach({"--ncu-csv", "--file", path("same-build.csv"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json j = json::parse(r.out);
  EXPECT_TRUE(j["cubin"]["checked"].get<bool>()) << r.out;
  EXPECT_EQ(j["cubin"]["report"], case_cubin);
  EXPECT_EQ(RunStore::open_read_only(db_).load_case(case_id_).measurement("ncu_dram_bytes_read"), 537395200.0);

  write_file(path("no-cubin.csv"), csv);
  r = attach({"--ncu-csv", "--file", path("no-cubin.csv")});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("cubin     not checked: the report names no cubin"), std::string::npos) << r.out;
}

TEST_F(AttachTest, PlainFileByCaseIdWithAName) {
  write_file(path("notes.bin"), std::string("a\0b", 3));
  CliResult r = run_cli({"attach", "--db", db_, "--case", std::to_string(case_id_), "--file", path("notes.bin"),
                         "--name", "notes", "--mime", "application/octet-stream"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CaseRecord rec = RunStore::open_read_only(db_).load_case(case_id_, true);
  ASSERT_FALSE(rec.artifacts.empty());
  EXPECT_EQ(rec.artifacts.back().name, "notes");
  EXPECT_EQ(rec.artifacts.back().mime, "application/octet-stream");
  EXPECT_EQ(rec.artifacts.back().data, (std::vector<std::uint8_t>{'a', 0, 'b'}));
  EXPECT_TRUE(std::isnan(rec.kernel.occupancy_achieved)) << "without --ncu nothing but the file is stored";
}

TEST_F(AttachTest, RefusalsNameTheProblemAndLeaveTheDatabaseAlone) {
  const std::string before = read_file(db_);
  // No ok case at that operating point: the stored cases are listed.
  CliResult missing = run_cli(
      concat({"attach", "--db", db_, "--backend", "cpu", "--kv", "k16v16", "--ncu", "--file", report_}, kShape));
  expect_refused(missing, "no ok case for k16v16", before);
  EXPECT_NE(missing.err.find("k8v8/transform/full B=2"), std::string::npos) << missing.err;
  // The default backend (cuda) has no case in this database.
  expect_refused(run_cli(concat({"attach", "--db", db_, "--kv", "k8v8", "--file", report_}, kShape)),
                 "no case of backend cuda", before);
  // No case at that batch.
  expect_refused(run_cli({"attach", "--db", db_, "--backend", "cpu", "--kv", "k8v8", "--file", report_}),
                 "stored batches: 2", before);
  // The report of another case (its `tilepath run` summary names B=64).
  write_file(path("other.txt"), fixture("ncu-h200-k8v8-fp8_qk-k_only.txt"));
  expect_refused(attach({"--ncu", "--file", path("other.txt")}), "is the ncu report of case", before);
  // Not an ncu report; an ncu report without the Occupancy section.
  write_file(path("plain.txt"), "hello\n");
  expect_refused(attach({"--ncu", "--file", path("plain.txt")}), "no profiled kernel launch", before);
  std::string no_occupancy;
  for (const std::string& line : lines(read_file(report_)))
    if (line.find("Achieved Occupancy") == std::string::npos) no_occupancy += line + "\n";
  write_file(path("no-occ.txt"), no_occupancy);
  expect_refused(attach({"--ncu", "--file", path("no-occ.txt")}), "'Achieved Occupancy'", before);
  // Missing file, bad flags, unknown case id, --case beside operating-point flags.
  expect_refused(attach({"--file", path("absent.txt")}), "absent.txt", before);
  expect_refused(
      run_cli(concat({"attach", "--db", db_, "--backend", "cpu", "--kv", "k9v9", "--file", report_}, kShape)), "k9v9",
      before);
  expect_refused(run_cli({"attach", "--db", db_, "--case", "999", "--file", report_}), "--case 999", before);
  expect_refused(run_cli({"attach", "--db", db_, "--case", "1", "--kv", "k8v8", "--file", report_}), "--kv", before);
  // A database that does not exist is not created.
  CliResult no_db = run_cli(concat({"attach", "--db", path("none.sqlite"), "--kv", "k8v8", "--file", report_}, kShape));
  EXPECT_NE(no_db.exit_code, 0);
  EXPECT_FALSE(fs::exists(path("none.sqlite")));
}

}  // namespace
}  // namespace tilepath::testing
