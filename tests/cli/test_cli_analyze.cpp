// `tilepath analyze` and `tilepath db upgrade|reanalyze` end to end, on the bundled
// H200 database and on small sim databases.

#include <gtest/gtest.h>

#include <filesystem>

#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include "cli_process.h"
#include "core/analysis/break_even_analysis.h"
#include "core/analysis/case_match.h"
#include "core/store/run_store.h"

namespace tilepath::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kBundled = std::string(TILEPATH_SOURCE_DIR) + "/data/h200-sweep.sqlite";
const std::vector<std::string> kHeadline = {"--batch",  "64",        "--context", "4096", "--kv",    "k8v8",
                                            "--k-path", "transform", "--mode",    "full", "--cache", "hbm_cold"};

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// `tilepath run` of a small K8/V8 case on the sim backend into db.
CliResult sim_run(const std::string& db, const std::string& gpu = "h200") {
  return run_cli({"run",     "--backend",  "sim",       "--gpu",       gpu,         "--kv", "k8v8",
                  "--batch", "4",          "--context", "2048",        "--q-heads", "32",   "--kv-heads",
                  "8",       "--head-dim", "128",       "--page-size", "16",        "--db", db});
}

class CliAnalyzeTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = make_temp_dir("analyze"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::string copy_of(const std::string& source, const std::string& name) const {
    fs::copy_file(source, path(name));
    return path(name);
  }
  std::string dir_;
};

TEST_F(CliAnalyzeTest, PrintsTheBreakEvenOfTheBundledHeadlineCase) {
  const std::string db = copy_of(kBundled, "h200.sqlite");
  const std::string before = read_file(db);
  CliResult r = run_cli(concat({"analyze", "--db", db, "--json"}, kHeadline));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(db), before) << "analyze is read-only";
  const json j = json::parse(r.out);
  for (const char* key :
       {"stages", "predicted_ii_us", "measured_ii_us", "limiting_stage", "unknown_stages", "break_even"})
    EXPECT_TRUE(j.contains(key)) << key;
  // The bundled run measured every stage of the graph alone: none unknown.
  EXPECT_TRUE(j["unknown_stages"].empty()) << j["unknown_stages"].dump();
  EXPECT_FALSE(j["ii_is_lower_bound"].get<bool>());
  for (const json& s : j["stages"]) EXPECT_TRUE(s["cost_us"].is_number()) << s.dump();

  const json& b = j["break_even"];
  ASSERT_TRUE(b.is_object()) << j.dump(2);
  // The same numbers as the stored cases give through the analysis layer.
  const RunStore store = RunStore::open_read_only(db);
  const std::vector<CaseSummary> cases = store.cases();
  OperatingPoint op;  // the headline: B=64, S=4096, K8/V8 transform/full, HBM-cold
  const std::optional<CaseSummary> k8v8 = analysis::find_stored_case(cases, op);
  ASSERT_TRUE(k8v8.has_value());
  EXPECT_EQ(j["case_id"], k8v8->case_id);
  const std::optional<analysis::BreakEvenAnalysis> expected = analysis::break_even_for(*k8v8, cases);
  ASSERT_TRUE(expected && expected->decomposition);
  EXPECT_EQ(b["k16v8_case"], expected->k16v8_case_id);
  EXPECT_EQ(b["unit"], "us_per_1k_tokens");
  EXPECT_DOUBLE_EQ(b["delta"].get<double>(), expected->decomposition->delta_us);
  EXPECT_DOUBLE_EQ(b["t_k8v8_us"].get<double>(), *k8v8->record.measurement("latency_us"));
  EXPECT_DOUBLE_EQ(b["v_hidden_fraction"].get<double>(), expected->v_hidden_fraction);

  // The text form names the break-even too.
  CliResult text = run_cli(concat({"analyze", "--db", db}, kHeadline));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("break-even against K16/V8"), std::string::npos) << text.out;
}

TEST_F(CliAnalyzeTest, AStageWithNoMeasurementIsUnknownNeverZero) {
  // The headline case with accum's costs taken out, as a run that never measured it.
  const std::string db = copy_of(kBundled, "no-accum.sqlite");
  {
    const RunStore store = RunStore::open_read_only(db);
    const std::optional<CaseSummary> c = analysis::find_stored_case(store.cases(), OperatingPoint{});
    ASSERT_TRUE(c.has_value());
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
    const std::string sql = "DELETE FROM stage_costs WHERE stage = 'accum' AND case_id = " + std::to_string(c->case_id);
    EXPECT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(raw);
    EXPECT_GT(sqlite3_changes(raw), 0);
    sqlite3_close(raw);
  }
  CliResult r = run_cli(concat({"analyze", "--db", db, "--json"}, kHeadline));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_NE(std::find(j["unknown_stages"].begin(), j["unknown_stages"].end(), "accum"), j["unknown_stages"].end());
  EXPECT_TRUE(j["ii_is_lower_bound"].get<bool>());
  for (const json& s : j["stages"])
    if (s["stage"] == "accum") {
      EXPECT_TRUE(s["cost_us"].is_null()) << s.dump();
    }
  CliResult text = run_cli(concat({"analyze", "--db", db}, kHeadline));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("unknown stages  accum"), std::string::npos) << text.out;
}

TEST_F(CliAnalyzeTest, AWgmmaCaseWithItsComputeMeasuredWholeNamesWhatLimitsIt) {
  // The bundled wgmma case of B=64, S=4096 (its ring measured whole by load_only), given the
  // compute side a run of the compute_only and isolated kernels would store, in place of any it
  // holds: first below the ring, then above it.
  const std::vector<std::string> wgmma = {"--batch", "64",     "--context", "4096",  "--kv",  "k8v8",    "--k-path",
                                          "fp8_qk",  "--mode", "k_only",    "--mma", "wgmma", "--cache", "hbm_cold"};
  const std::string db = copy_of(kBundled, "wgmma.sqlite");
  long long case_id = 0;
  {
    const RunStore store = RunStore::open_read_only(db);
    OperatingPoint op;
    op.k_path = KPath::fp8_qk;
    op.mode = TransformMode::k_only;
    op.mma = Mma::wgmma;
    const std::optional<CaseSummary> c = analysis::find_stored_case(store.cases(), op);
    ASSERT_TRUE(c.has_value());
    ASSERT_TRUE(c->record.measurement("tile_interval_load_only_us").has_value());
    case_id = c->case_id;
  }
  const auto exec = [&](const std::string& sql) {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(raw);
    sqlite3_close(raw);
  };
  const std::string id = std::to_string(case_id);
  const std::string compute_stages = "('k_prep', 'qk', 'softmax', 'v_prep', 'pv', 'accum')";
  exec("DELETE FROM stage_costs WHERE method = 'isolated' AND stage IN " + compute_stages + " AND case_id = " + id);
  exec("DELETE FROM measurements WHERE name = 'tile_interval_compute_only_us' AND case_id = " + id);
  exec("INSERT INTO stage_costs (case_id, stage, method, cost_us) VALUES (" + id + ", 'qk', 'isolated', 0.15), (" + id +
       ", 'softmax', 'isolated', 0.2), (" + id + ", 'pv', 'isolated', 0.14), (" + id + ", 'accum', 'isolated', 0.02);" +
       "INSERT INTO measurements (case_id, name, value, unit) VALUES (" + id +
       ", 'tile_interval_compute_only_us', 0.8, 'us')");
  CliResult r = run_cli(concat({"analyze", "--db", db, "--json"}, wgmma));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json k = json::parse(r.out)["kernel_ii"];
  ASSERT_TRUE(k.is_object()) << r.out;
  EXPECT_EQ(k["compute_source"], "compute_only");
  EXPECT_DOUBLE_EQ(k["busy_us"]["mma_warps"].get<double>(), 0.8);
  EXPECT_NEAR(k["compute_isolated_sum_us"].get<double>(), 0.51, 1e-12);
  EXPECT_EQ(k["limiting_agent"], "memory");  // the ring, 1.87 us per tile
  EXPECT_FALSE(k["ii_is_lower_bound"].get<bool>());
  CliResult text = run_cli(concat({"analyze", "--db", db}, wgmma));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("the ring (k_load and v_load, measured whole by the load_only kernel)"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("mma_warps     0.8 us per tile (measured whole by the compute_only kernel; its isolated "
                          "stages sum to 0.51 us)"),
            std::string::npos)
      << text.out;
  // The stage table marks the ring's two loads as what limits the kernel.
  const auto row_of = [](const std::string& out, const std::string& stage) {
    const std::size_t at = out.find("\n" + stage + " ");
    return at == std::string::npos ? std::string() : out.substr(at + 1, out.find('\n', at + 1) - at - 1);
  };
  const auto limits_the_kernel = [&](const std::string& out, const std::string& stage) {
    return row_of(out, stage).find("<- limits the kernel") != std::string::npos;
  };
  EXPECT_TRUE(limits_the_kernel(text.out, "k_load")) << text.out;
  EXPECT_TRUE(limits_the_kernel(text.out, "v_load")) << text.out;
  EXPECT_FALSE(limits_the_kernel(text.out, "softmax")) << text.out;

  exec("UPDATE measurements SET value = 2.5 WHERE name = 'tile_interval_compute_only_us' AND case_id = " + id);
  text = run_cli(concat({"analyze", "--db", db}, wgmma));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("the compute (every stage, measured whole by the compute_only kernel; its largest stage "
                          "softmax) on mma_warps, resource mma_warp_issue"),
            std::string::npos)
      << text.out;
  EXPECT_TRUE(limits_the_kernel(text.out, "softmax")) << text.out;
  EXPECT_FALSE(limits_the_kernel(text.out, "k_load")) << text.out;
}

TEST_F(CliAnalyzeTest, TheBundledDatabaseIsReadAsItIsAndItsPredictionsListTheirUnknownStages) {
  const RunStore store = RunStore::open_read_only(kBundled);
  EXPECT_GE(store.schema_version(), RunStore::oldest_schema_read_as_is()) << "read-only commands need no upgrade";
  int with_unknown = 0, predictions = 0;
  for (const CaseSummary& c : store.cases()) {
    for (const PredictionRow& p : c.record.predictions) {
      ++predictions;
      ASSERT_TRUE(p.unknown_stages.has_value()) << "case " << c.case_id << ": run `tilepath db reanalyze`";
      with_unknown += !p.unknown_stages->empty();
    }
  }
  EXPECT_GT(predictions, 0);
  EXPECT_EQ(with_unknown, 0);  // the bundled run measured every stage of every variant alone
}

TEST_F(CliAnalyzeTest, AnOlderFileIsRefusedWithTheUpgradeCommandAndUpgradeThenReanalyzeFixIt) {
  const std::string db = copy_of(std::string(TILEPATH_TEST_DATA_DIR) + "/store/fixtures/schema_v2.sqlite", "v2.sqlite");
  const std::string before = read_file(db);
  CliResult r = run_cli({"report", "--db", db});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("tilepath db upgrade " + db), std::string::npos) << r.err;
  EXPECT_EQ(read_file(db), before);

  r = run_cli({"db", "upgrade", db, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["from_version"], 2);
  EXPECT_EQ(j["to_version"], RunStore::current_schema_version());
  EXPECT_EQ(j["predictions_to_reanalyze"], 2);
  EXPECT_EQ(RunStore::open_read_only(db).schema_version(), RunStore::current_schema_version());

  r = run_cli({"db", "upgrade", db});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("already at schema version"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("db reanalyze"), std::string::npos) << r.out;

  r = run_cli({"db", "reanalyze", db, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = json::parse(r.out);
  // Cases 1 (ok) and 3 (failed) are measured; case 2's stage costs are model rows only.
  EXPECT_EQ(j["cases"], 3);
  for (const CaseSummary& c : RunStore::open_read_only(db).cases())
    for (const PredictionRow& p : c.record.predictions) {
      EXPECT_TRUE(p.unknown_stages.has_value()) << c.case_id;
      EXPECT_EQ(p.model, "ii_model/v2");
    }
}

TEST_F(CliAnalyzeTest, ASimCaseHasModelCostsOrUnknownOnesAndReanalyzeKeepsItsPrediction) {
  // A sim case stores model costs; a stage the model gives none is unknown, never 0.
  const std::string db = path("sim.sqlite");
  CliResult r = sim_run(db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli({"analyze", "--db", db, "--batch", "4", "--context", "2048", "--kv", "k8v8", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  for (const json& s : j["stages"]) EXPECT_EQ(s["source"], s["cost_us"].is_null() ? "unknown" : "model") << s;
  r = run_cli({"db", "reanalyze", db});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1 have one"), std::string::npos) << r.out;
}

TEST_F(CliAnalyzeTest, NoStoredCaseIsOneLineNamingTheOperatingPoint) {
  const std::string db = path("sim.sqlite");
  ASSERT_EQ(sim_run(db).exit_code, 0);
  const std::string before = read_file(db);
  CliResult r = run_cli({"analyze", "--db", db, "--batch", "4", "--context", "2048", "--kv", "k8v8", "--splits", "2"});
  EXPECT_EQ(r.exit_code, 1);
  ASSERT_EQ(lines(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find("no ok case measures k8v8/transform/full B=4 S=2048"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("splits=2"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(db), before);
}

TEST_F(CliAnalyzeTest, TwoDevicesMeasuringThePointAskForOne) {
  const std::string db = path("two.sqlite");
  for (const char* gpu : {"h200", "h100_sxm"}) ASSERT_EQ(sim_run(db, gpu).exit_code, 0);
  CliResult r = run_cli({"analyze", "--db", db, "--batch", "4", "--context", "2048", "--kv", "k8v8"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("choose one"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--device"), std::string::npos) << r.err;
  const std::string device = json::parse(run_cli({"report", "--db", db, "--json"}).out).at(0).at("device");
  r = run_cli({"analyze", "--db", db, "--batch", "4", "--context", "2048", "--kv", "k8v8", "--device", device});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(CliAnalyzeTest, DbUpgradeRefusesAForeignFileAndLeavesItUnchanged) {
  const std::string file = path("notes.txt");
  write_file(file, "not a database\n");
  CliResult r = run_cli({"db", "upgrade", file});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("not a tilepath database"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(file), "not a database\n");
  r = run_cli({"db", "reanalyze", path("absent.sqlite")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_FALSE(fs::exists(path("absent.sqlite")));
}

}  // namespace
}  // namespace tilepath::testing
