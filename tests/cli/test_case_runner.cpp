// case_runner, run_sweep and report over the sim plugin (deterministic model
// results) and a temporary run store.

#include <gtest/gtest.h>

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/case_runner.h"
#include "core/ii_model.h"
#include "core/report.h"
#include "core/stage_graph.h"
#include "core/sweep.h"

namespace tilepath {
namespace {

namespace fs = std::filesystem;

class CaseRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("TILEPATH_MODELS_DIR", TILEPATH_SOURCE_DIR "/models", 1);
    sim_ = host_.load_file(std::string(TILEPATH_PLUGIN_DIR) + "/libtilepath_backend_sim.so");
    ASSERT_NE(sim_, nullptr) << (host_.problems().empty() ? "" : host_.problems().front().reason);
    ASSERT_FALSE(sim_->devices().empty()) << sim_->no_device_reason();
    dir_ = fs::temp_directory_path() / ("tilepath-case-runner-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static OperatingPoint small_point(KvDtype kv) {
    OperatingPoint op;
    op.batch = 4;
    op.context = 2048;
    op.kv = kv;
    op.k_path = default_k_path(kv);
    op.mode = default_mode(kv, op.k_path);
    return op;
  }

  PluginHost host_;
  const Backend* sim_ = nullptr;
  fs::path dir_;
};

// Counts progress and cancels after `cancel_after` stored cases.
class CountingObserver : public ProgressObserver {
 public:
  explicit CountingObserver(int cancel_after = -1) : cancel_after_(cancel_after) {}
  void progress(double fraction, const std::string&) override {
    EXPECT_GE(fraction, 0.0);
    EXPECT_LE(fraction, 1.0);
    ++progress_calls;
  }
  void case_done(const CaseRecord&, bool skipped) override { ++(skipped ? skipped_cases : stored_cases); }
  bool cancelled() const override { return cancel_after_ >= 0 && stored_cases >= cancel_after_; }
  int progress_calls = 0, stored_cases = 0, skipped_cases = 0;

 private:
  int cancel_after_;
};

TEST_F(CaseRunnerTest, SimCaseCarriesMeasurementsStageCostsAndThePrediction) {
  OperatingPoint op = small_point(KvDtype::k8v8);
  RunSettings settings;
  settings.gpu_model = "h200";
  CountingObserver observer;
  CaseRecord rec = run_case(*sim_, op, settings, &observer);
  ASSERT_EQ(rec.status, CaseStatus::ok) << rec.message;
  EXPECT_GT(observer.progress_calls, 0);
  EXPECT_EQ(rec.case_key, case_key(op, settings));
  EXPECT_NE(rec.case_key.find(op.key()), std::string::npos);
  ASSERT_TRUE(rec.measurement("latency_us"));
  EXPECT_GT(*rec.measurement("latency_us"), 0);
  ASSERT_TRUE(rec.measurement("tile_interval_us"));
  ASSERT_TRUE(rec.measurement("floor_fraction"));
  EXPECT_GT(*rec.measurement("floor_fraction"), 0);
  EXPECT_LE(*rec.measurement("floor_fraction"), 1.0 + 1e-9);
  EXPECT_FALSE(rec.kernel.kernel_name.empty());
  EXPECT_FALSE(rec.artifacts.empty());  // the sim keeps its estimate as an artifact

  // The prediction must equal the II model applied to the model costs the backend reported.
  StageGraph graph = StageGraph::build(op);
  StageCosts costs;
  int model_rows = 0;
  for (const StageCostRow& row : rec.stage_costs) {
    EXPECT_TRUE(std::isfinite(row.cost_us));
    if (row.method == CostMethod::model && graph.has_stage(row.stage)) {
      costs[row.stage] = row.cost_us;
      ++model_rows;
    }
  }
  ASSERT_GT(model_rows, 0);
  for (Stage s : graph.stages())
    if (!costs.has(s)) costs[s] = 0;
  IIPrediction expected = predict_ii(graph, costs);
  ASSERT_EQ(rec.predictions.size(), 1u);
  EXPECT_DOUBLE_EQ(rec.predictions[0].ii_us, expected.ii_us);
  EXPECT_EQ(rec.predictions[0].limiting_stage, to_string(expected.limiting_stage));
  EXPECT_EQ(rec.predictions[0].limiting_agent, to_string(expected.limiting_agent));
  double eff = overlap_efficiency(expected, *rec.measurement("tile_interval_us"));
  if (std::isfinite(eff)) {
    EXPECT_DOUBLE_EQ(rec.predictions[0].overlap_efficiency, eff);
  }
  auto detail = nlohmann::json::parse(rec.predictions[0].detail_json);
  EXPECT_EQ(detail["cost_sources"]["qk"], "model");
}

TEST_F(CaseRunnerTest, UnsupportedPathIsARecordWithTheReason) {
  OperatingPoint op = small_point(KvDtype::k8v8);
  op.k_path = KPath::fp8_qk;
  op.mode = default_mode(op.kv, op.k_path);
  RunSettings settings;
  settings.gpu_model = "a100_sxm";  // Ampere has no FP8 MMA
  CaseRecord rec = run_case(*sim_, op, settings);
  EXPECT_EQ(rec.status, CaseStatus::unsupported);
  EXPECT_FALSE(rec.message.empty());
  EXPECT_TRUE(rec.measurements.empty());
  EXPECT_TRUE(rec.predictions.empty());
}

TEST_F(CaseRunnerTest, CancelledBeforeStartRunsNothing) {
  CancelFlag cancel{1};
  CaseRecord rec = run_case(*sim_, small_point(KvDtype::k16v8), RunSettings{}, nullptr, &cancel);
  EXPECT_EQ(rec.status, CaseStatus::cancelled);
  EXPECT_TRUE(rec.measurements.empty());
}

TEST_F(CaseRunnerTest, InvalidOperatingPointIsAnErrorRecord) {
  OperatingPoint op = small_point(KvDtype::k8v8);
  op.kv_heads = 3;  // does not divide 32
  CaseRecord rec = run_case(*sim_, op, RunSettings{});
  EXPECT_EQ(rec.status, CaseStatus::error);
  EXPECT_NE(rec.message.find("kv_heads"), std::string::npos) << rec.message;
}

TEST_F(CaseRunnerTest, CaseKeyDistinguishesGpuModels) {
  OperatingPoint op = small_point(KvDtype::k8v8);
  RunSettings a, b;
  a.gpu_model = "h200";
  b.gpu_model = "b200";
  EXPECT_NE(case_key(op, a), case_key(op, b));
  RunSettings c = a;
  c.repeats = 3;
  c.seed = 7;
  EXPECT_EQ(case_key(op, a), case_key(op, c)) << "precision settings do not change the case identity";
  OperatingPoint other = op;
  other.cache = CacheState::l2_warm;
  EXPECT_NE(case_key(op, a), case_key(other, a));
}

TEST_F(CaseRunnerTest, RunInfoNamesToolHostAndTheModelledDevice) {
  RunSettings settings;
  settings.gpu_model = "h200";
  RunInfo info = make_run_info(*sim_, settings, "tilepath test");
  EXPECT_EQ(info.backend, "sim");
  EXPECT_FALSE(info.tool_version.empty());
  EXPECT_FALSE(info.git_revision.empty());
  EXPECT_FALSE(info.host.empty());
  EXPECT_EQ(info.command, "tilepath test");
  EXPECT_NE(info.device.find("H200"), std::string::npos) << info.device;
  settings.gpu_model = "b200";
  EXPECT_NE(make_run_info(*sim_, settings, "").device.find("B200"), std::string::npos);
}

TEST_F(CaseRunnerTest, SweepStoresEveryCaseOnceAndResumesAfterCancel) {
  SweepSpec spec = parse_sweep_spec(nlohmann::json::parse(
      R"({"backend": "sim", "axes": {"kv": "all", "k_path": "all", "mode": "all", "batch": [1, 8]}})"));
  const int n = static_cast<int>(spec.cases.size());
  ASSERT_GT(n, 4);
  std::string db = (dir_ / "sweep.sqlite").string();
  {
    RunStore store = RunStore::open(db);
    CountingObserver stop_after_three(3);
    SweepOutcome first = run_sweep(spec, *sim_, store, "test", &stop_after_three);
    EXPECT_TRUE(first.cancelled);
    EXPECT_EQ(first.ran, 3);
    EXPECT_EQ(store.case_count(), 3);

    CountingObserver observer;
    SweepOutcome second = run_sweep(spec, *sim_, store, "test", &observer);
    EXPECT_FALSE(second.cancelled);
    EXPECT_EQ(second.skipped_existing, 3);
    EXPECT_EQ(second.ran, n - 3);
    EXPECT_EQ(observer.skipped_cases, 3);
    EXPECT_EQ(store.case_count(), n);

    SweepOutcome third = run_sweep(spec, *sim_, store, "test");
    EXPECT_EQ(third.ran, 0);
    EXPECT_EQ(third.skipped_existing, n);
    EXPECT_EQ(third.run_id, 0) << "nothing to run: no new run row";
    EXPECT_EQ(store.case_count(), n);
    EXPECT_EQ(store.runs().size(), 2u);

    std::set<std::string> keys;
    for (const CaseSummary& c : store.cases()) keys.insert(c.record.case_key);
    EXPECT_EQ(static_cast<int>(keys.size()), n);
  }

  // Report: one row per case, the columns the issue asks for, cells filled from the records.
  RunStore store = RunStore::open_read_only(db);
  const auto& columns = report_columns();
  for (const char* required : {"backend",
                               "device",
                               "kv",
                               "k_path",
                               "mode",
                               "cache",
                               "batch",
                               "context",
                               "q_heads",
                               "kv_heads",
                               "head_dim",
                               "page_size",
                               "latency_us",
                               "tile_interval_us",
                               "tile_interval_load_only_us",
                               "floor_fraction",
                               "limiting_stage",
                               "kernel",
                               "cubin_sha256",
                               "regs",
                               "kernel_check_rel_l2"})
    EXPECT_NE(std::find(columns.begin(), columns.end(), required), columns.end()) << required;
  auto rows = report_rows(store);
  ASSERT_EQ(static_cast<int>(rows.size()), n);
  auto col = [&](const char* name) {
    return static_cast<std::size_t>(std::find(columns.begin(), columns.end(), name) - columns.begin());
  };
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), columns.size());
    EXPECT_EQ(row[col("backend")], "sim");
    EXPECT_FALSE(row[col("latency_us")].empty());
    EXPECT_FALSE(row[col("limiting_stage")].empty());
    EXPECT_TRUE(row[col("kernel_check_rel_l2")].empty()) << "the sim computes no output";
    EXPECT_TRUE(row[col("regs")].empty()) << "the sim models no registers";
  }
  std::string csv = report_csv(store);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), n + 1);
  std::string md = report_markdown(store);
  EXPECT_EQ(md.rfind("| ", 0), 0u);
  EXPECT_EQ(std::count(md.begin(), md.end(), '\n'), n + 2);
}

// Holds the first case whose claim is taken (inside run_sweep, before the case is stored)
// until the claim's heartbeat moves past its claimed_at: a case that runs long stays claimed.
class HoldTheFirstClaimedCase : public ProgressObserver {
 public:
  explicit HoldTheFirstClaimedCase(std::string db) : db_(std::move(db)) {}
  void progress(double, const std::string&) override {
    if (held_) return;
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open_v2(db_.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_busy_timeout(raw, 5000);
    const auto claim = [&](double& claimed_at, double& heartbeat_at) {
      sqlite3_stmt* q = nullptr;
      EXPECT_EQ(sqlite3_prepare_v2(raw, "SELECT claimed_at, heartbeat_at FROM claims WHERE pid = ?", -1, &q, nullptr),
                SQLITE_OK);
      sqlite3_bind_int64(q, 1, getpid());
      const bool found = sqlite3_step(q) == SQLITE_ROW;
      if (found) {
        claimed_at = sqlite3_column_double(q, 0);
        heartbeat_at = sqlite3_column_double(q, 1);
      }
      sqlite3_finalize(q);
      return found;
    };
    double claimed_at = 0, heartbeat_at = 0;
    if (claim(claimed_at, heartbeat_at)) {
      held_ = true;
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (heartbeat_at <= claimed_at && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        claim(claimed_at, heartbeat_at);
      }
      advanced_ = heartbeat_at > claimed_at;
    }
    sqlite3_close(raw);
  }
  bool held_ = false, advanced_ = false;

 private:
  std::string db_;
};

TEST_F(CaseRunnerTest, ASweepKeepsTheClaimOfTheCaseItRunsBeating) {
  RunStore::set_claim_heartbeat_interval(std::chrono::milliseconds(20));
  struct RestoreInterval {
    ~RestoreInterval() {
      RunStore::set_claim_heartbeat_interval(
          std::chrono::milliseconds(static_cast<long>(RunStore::kClaimHeartbeatIntervalSeconds * 1000)));
    }
  } restore;
  SweepSpec spec = parse_sweep_spec(nlohmann::json::parse(R"({"backend": "sim", "axes": {"batch": [1, 8]}})"));
  const std::string db = (dir_ / "beat.sqlite").string();
  RunStore store = RunStore::open(db);
  HoldTheFirstClaimedCase observer(db);
  const SweepOutcome outcome = run_sweep(spec, *sim_, store, "test", &observer);
  EXPECT_TRUE(observer.held_) << "no claim of this process seen while a case ran";
  EXPECT_TRUE(observer.advanced_) << "the claim's heartbeat did not advance within 10 s at a 20 ms interval";
  EXPECT_EQ(outcome.ran, 2);
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(store.handle(), "SELECT COUNT(*) FROM claims", -1, &q, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(q, 0), 0) << "stored cases keep no claim";
  sqlite3_finalize(q);
}

}  // namespace
}  // namespace tilepath
