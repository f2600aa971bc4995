// The `tilepath` binary end to end against the cpu and sim plugins.

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_process.h"
#include "core/store/run_store.h"

namespace tilepath::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<std::string> kSmallShape = {"--batch",    "2", "--context",  "300", "--q-heads",   "8",
                                              "--kv-heads", "2", "--head-dim", "64",  "--page-size", "16"};

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = make_temp_dir("e2e"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  // Writes a spec file and returns its path.
  std::string spec(const std::string& name, const json& j) const {
    write_file(path(name), j.dump(2));
    return path(name);
  }

  static long long case_count(const std::string& db) { return RunStore::open_read_only(db).case_count(); }

  // A failure must be one line on stderr, a non-zero exit, and leave `file` byte-identical.
  static void expect_one_line_error(const CliResult& r, const std::string& must_mention) {
    EXPECT_NE(r.exit_code, 0);
    auto err = lines(r.err);
    ASSERT_EQ(err.size(), 1u) << "stderr:\n" << r.err;
    EXPECT_NE(err[0].find("error"), std::string::npos) << err[0];
    EXPECT_NE(err[0].find(must_mention), std::string::npos) << err[0];
  }

  // A database with one sim case in it.
  std::string make_sim_db(const std::string& name, const std::string& kv = "k8v8") const {
    std::string db = path(name);
    CliResult r = run_cli(concat({"run", "--backend", "sim", "--kv", kv, "--db", db}, kSmallShape));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return db;
  }

  std::string dir_;
};

TEST_F(CliTest, BackendsJsonListsCpuAndSimWithDevices) {
  CliResult r = run_cli({"backends", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  std::set<std::string> names;
  for (const auto& b : j["backends"]) {
    names.insert(b["name"].get<std::string>());
    if (b["name"] == "cpu" || b["name"] == "sim") {
      EXPECT_FALSE(b["devices"].empty()) << b.dump();
    }
  }
  EXPECT_TRUE(names.count("cpu")) << r.out;
  EXPECT_TRUE(names.count("sim")) << r.out;

  CliResult text = run_cli({"backends"});
  ASSERT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("cpu"), std::string::npos);
  EXPECT_NE(text.out.find("device 0"), std::string::npos);
}

TEST_F(CliTest, RunOnCpuStoresOneCaseAndPrintsTheSummary) {
  std::string db = path("run.sqlite");
  CliResult r = run_cli(
      concat({"run", "--backend", "cpu", "--kv", "k8v8", "--repeats", "2", "--seed", "5", "--db", db}, kSmallShape));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("latency"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("predicted II"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("limiting stage"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("status          ok"), std::string::npos) << r.out;
  RunStore store = RunStore::open_read_only(db);
  ASSERT_EQ(store.case_count(), 1);
  CaseSummary c = store.cases().front();
  EXPECT_EQ(c.backend, "cpu");
  EXPECT_EQ(c.record.op.kv, KvDtype::k8v8);
  EXPECT_EQ(c.record.op.batch, 2);
  EXPECT_EQ(c.record.op.context, 300);
  EXPECT_EQ(c.record.status, CaseStatus::ok);
  EXPECT_TRUE(c.record.measurement("latency_us"));
  ASSERT_FALSE(c.record.quality.empty()) << "the cpu backend checks its output";
  ASSERT_EQ(store.runs().size(), 1u);
  EXPECT_FALSE(store.runs()[0].uuid.empty());
  EXPECT_NE(store.runs()[0].command.find("run --backend cpu"), std::string::npos);
}

// The speed run stores two verdicts: the kernel check decides the status; the gate on
// the case's own (here Qwen-like) keys against full precision is stored beside it.
TEST_F(CliTest, RunStoresTheKernelCheckAndTheGateOnItsOwnKeys) {
  std::string db = path("keys.sqlite");
  CliResult r = run_cli(concat(
      {"run", "--backend", "cpu", "--kv", "k8v8", "--repeats", "1", "--seed", "5", "--keys", "qwen_bias", "--db", db},
      kSmallShape));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("status          ok"), std::string::npos) << "the gate decides nothing about the speed run";
  EXPECT_NE(r.out.find("gate kl"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAILED"), std::string::npos) << "plain K8 on Qwen-like keys fails the gate: " << r.out;
  EXPECT_NE(r.out.find("on qwen_bias keys"), std::string::npos) << r.out;

  RunStore store = RunStore::open_read_only(db);
  const CaseSummary c = store.cases().front();
  EXPECT_NE(c.record.case_key.find("|keys=qwen_bias"), std::string::npos) << c.record.case_key;
  std::set<std::string> metrics;
  for (const QualityRow& q : c.record.quality) {
    metrics.insert(q.metric);
    EXPECT_EQ(q.distribution, "qwen_bias") << q.metric;
  }
  EXPECT_EQ(metrics, (std::set<std::string>{"kernel_check_rel_l2", "kernel_check_max_abs", "rel_l2", "max_abs", "kl",
                                            "top8", "top32"}));
  EXPECT_EQ(c.record.measurement("gate_rows_checked"), c.record.measurement("gate_rows_total"));
  EXPECT_EQ(c.record.measurement("gate_rows_total"), 2.0 * 2.0) << "batch 2 x kv heads 2";

  CliResult report = run_cli({"report", "--db", db, "--format", "csv"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("gate_passed"), std::string::npos);
  EXPECT_NE(report.out.find(",qwen_bias,"), std::string::npos) << report.out;

  CliResult bad =
      run_cli(concat({"run", "--backend", "cpu", "--kv", "k8v8", "--keys", "uniform", "--db", db}, kSmallShape));
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--keys"), std::string::npos) << bad.err;
}

TEST_F(CliTest, RunJsonOnSimNamesTheModelledGpu) {
  std::string db = path("sim.sqlite");
  CliResult r = run_cli(
      concat({"run", "--backend", "sim", "--gpu", "h200", "--kv", "k16v8", "--cache", "l2_warm", "--json", "--db", db},
             kSmallShape));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["backend"], "sim");
  EXPECT_NE(j["device"].get<std::string>().find("H200"), std::string::npos) << j["device"];
  EXPECT_EQ(j["device_uid"].get<std::string>().rfind("model:", 0), 0u) << j["device_uid"];
  EXPECT_EQ(j["op"]["kv"], "k16v8");
  EXPECT_EQ(j["op"]["cache"], "l2_warm");
  EXPECT_GT(j["measurements"]["latency_us"].get<double>(), 0);
  EXPECT_FALSE(j["prediction"]["limiting_stage"].get<std::string>().empty());
  EXPECT_EQ(case_count(db), 1);
}

TEST_F(CliTest, SweepWritesEveryCaseAndARerunAddsNone) {
  std::string s =
      spec("small.json", {{"name", "small"},
                          {"backend", "sim"},
                          {"base", {{"q_heads", 8}, {"kv_heads", 2}, {"head_dim", 64}}},
                          {"axes", {{"kv", "all"}, {"k_path", "all"}, {"mode", "all"}, {"batch", {1, 4}}}}});
  CliResult dry = run_cli({"sweep", s, "--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  std::string db = path("sweep.sqlite");
  CliResult r = run_cli({"sweep", s, "--db", db, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json outcome = json::parse(r.out);
  int total = outcome["total"].get<int>();
  EXPECT_EQ(total, 24);  // 12 valid variants x 2 batches
  EXPECT_EQ(outcome["ran"].get<int>(), total);
  EXPECT_EQ(case_count(db), total);
  EXPECT_NE(r.err.find("case 24/24"), std::string::npos) << "progress on stderr:\n" << r.err;

  const std::string bytes = read_file(db);
  CliResult again = run_cli({"sweep", s, "--db", db, "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(json::parse(again.out)["skipped_existing"].get<int>(), total);
  EXPECT_EQ(case_count(db), total);
  EXPECT_EQ(read_file(db), bytes) << "a resume with nothing to run leaves the file byte-identical";
}

TEST_F(CliTest, SeedIsADecimalIntegerIn64Bits) {
  const std::string db = path("seed.sqlite");
  for (const char* bad : {"-1", "18446744073709551616", "", "0x10", "1e3"}) {
    CliResult r = run_cli(concat({"run", "--backend", "sim", "--kv", "k8v8", "--seed", bad, "--db", db}, kSmallShape));
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.out;
    EXPECT_NE(r.err.find("--seed"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("18446744073709551615"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(db)) << "a refused flag creates no file";
  CliResult ok = run_cli(
      concat({"run", "--backend", "sim", "--kv", "k8v8", "--seed", "18446744073709551615", "--db", db}, kSmallShape));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// Launch counts are range-checked before anything runs: 2^31-1 warm-ups and repeats
// once overflowed the cpu plugin's arithmetic.
TEST_F(CliTest, LaunchCountsAreRangeChecked) {
  const std::string db = path("counts.sqlite");
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--warmup", "2147483647"}, {"--repeats", "2147483647"}, {"--repeats", "0"}}) {
    CliResult r = run_cli(concat(concat({"run", "--backend", "cpu", "--kv", "k8v8", "--db", db}, flags), kSmallShape));
    EXPECT_EQ(r.exit_code, 2) << flags[0] << " " << flags[1] << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(flags[0]), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("100000"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(db));
}

// Error lines stay whole: a NUL in a spec's JSON key is spelled out, not the line's end;
// an unconvertible number names the flag, the value and what the flag takes.
TEST_F(CliTest, ErrorLinesAreWholeAndNameWhatIsAllowed) {
  const std::string s = spec("nul.json", json::parse("{\"settings\": {\"rep\\u0000eats\": 1}}"));
  CliResult nul = run_cli({"sweep", s, "--dry-run"});
  EXPECT_EQ(nul.exit_code, 2);
  EXPECT_NE(nul.err.find("rep\\x00eats"), std::string::npos) << nul.err;
  EXPECT_NE(nul.err.find("unknown setting"), std::string::npos) << "the message goes on past the NUL: " << nul.err;
  CliResult conv = run_cli(concat(
      {"run", "--backend", "sim", "--kv", "k8v8", "--repeats", "abc", "--db", path("conv.sqlite")}, kSmallShape));
  EXPECT_EQ(conv.exit_code, 2);
  EXPECT_NE(conv.err.find("--repeats: 'abc' is not a decimal integer; allowed:"), std::string::npos) << conv.err;
}

// Two sweeps of one spec on one file at once store every key once.
TEST_F(CliTest, TwoConcurrentSweepsStoreEachCaseOnce) {
  const std::string s =
      spec("twice.json", {{"name", "twice"},
                          {"backend", "sim"},
                          {"base", {{"q_heads", 8}, {"kv_heads", 2}, {"head_dim", 64}}},
                          {"axes", {{"kv", "all"}, {"k_path", "all"}, {"mode", "all"}, {"batch", {1, 2, 4, 8}}}}});
  const std::string db = path("twice.sqlite");
  ASSERT_EQ(run_cli({"sweep", s, "--db", db, "--dry-run"}).exit_code, 0);
  {
    RunStore created = RunStore::open(db);  // both start on an existing file
  }
  CliProcess first({"sweep", s, "--db", db}), second({"sweep", s, "--db", db});
  EXPECT_EQ(first.wait().exit_code, 0);
  EXPECT_EQ(second.wait().exit_code, 0);
  RunStore store = RunStore::open_read_only(db);
  std::set<std::string> keys;
  for (const CaseSummary& c : store.cases()) EXPECT_TRUE(keys.insert(c.record.case_key).second) << c.record.case_key;
  EXPECT_EQ(keys.size(), 48u);
}

// A reader that closes the pipe early (`| head -1`) does not kill the sweep: every case
// is stored and the exit status is 0.
TEST_F(CliTest, AClosedOutputPipeDoesNotStopASweep) {
  const std::string s =
      spec("pipe.json", {{"name", "pipe"},
                         {"backend", "sim"},
                         {"base", {{"q_heads", 8}, {"kv_heads", 2}, {"head_dim", 64}}},
                         {"axes", {{"kv", "all"}, {"k_path", "all"}, {"mode", "all"}, {"batch", {1, 4}}}}});
  const std::string db = path("pipe.sqlite");
  const std::string status_file = path("status.txt");
  const std::string command = "bash -c 'TILEPATH_PLUGIN_PATH=" TILEPATH_PLUGIN_DIR
                              " TILEPATH_MODELS_DIR=" TILEPATH_SOURCE_DIR "/models " TILEPATH_CLI_PATH " sweep " +
                              s + " --db " + db + " 2>&1 | head -c 1 >/dev/null; echo ${PIPESTATUS[0]} > " +
                              status_file + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(status_file);
  int status = -1;
  in >> status;
  EXPECT_EQ(status, 0) << "141 is SIGPIPE";
  EXPECT_EQ(case_count(db), 24);
}

TEST_F(CliTest, SigintMidSweepFinishesCleanlyAndTheRerunResumesWithoutDuplicates) {
  // cpu cases big enough that the sweep is still running when the signal arrives.
  std::string s =
      spec("slow.json", {{"name", "slow"},
                         {"backend", "cpu"},
                         {"settings", {{"warmup", 1}, {"repeats", 3}, {"seed", 3}}},
                         {"base", {{"q_heads", 16}, {"kv_heads", 4}, {"head_dim", 128}}},
                         {"axes", {{"kv", {"k8v8", "k16v8"}}, {"batch", {2, 3}}, {"context", {1000, 2000, 3000}}}}});
  const int total = 12;
  std::string db = path("resume.sqlite");
  CliProcess sweep({"sweep", s, "--db", db});
  // Wait until some cases are committed, then interrupt.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  long long stored = 0;
  while (sweep.running() && std::chrono::steady_clock::now() < deadline) {
    if (fs::exists(db)) {
      try {
        stored = case_count(db);
      } catch (const StoreError&) {
        stored = 0;  // still being created
      }
    }
    if (stored >= 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GE(stored, 2) << "the sweep did not store two cases in time";
  ASSERT_TRUE(sweep.running()) << "the sweep finished before it could be interrupted; make its cases slower";
  sweep.signal(SIGINT);
  CliResult interrupted = sweep.wait();
  EXPECT_EQ(interrupted.exit_code, 130) << interrupted.err;
  long long after_interrupt = case_count(db);
  EXPECT_GE(after_interrupt, 2);
  EXPECT_LT(after_interrupt, total);
  {
    RunStore store = RunStore::open_read_only(db);
    ASSERT_EQ(store.runs().size(), 1u);
  }

  CliResult resumed = run_cli({"sweep", s, "--db", db, "--json"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  json outcome = json::parse(resumed.out);
  EXPECT_EQ(outcome["skipped_existing"].get<long long>(), after_interrupt);
  EXPECT_EQ(outcome["ran"].get<long long>(), total - after_interrupt);

  RunStore store = RunStore::open_read_only(db);
  EXPECT_EQ(store.case_count(), total);
  std::set<std::string> keys;
  for (const CaseSummary& c : store.cases()) keys.insert(c.record.case_key);
  EXPECT_EQ(static_cast<int>(keys.size()), total) << "no case stored twice";
}

TEST_F(CliTest, PredictPrintsTheIiBreakdownForK8v8AndK16v8) {
  for (const char* kv : {"k8v8", "k16v8"}) {
    CliResult r = run_cli({"predict", "--gpu", "h200", "--kv", kv, "--batch", "64", "--context", "4096"});
    ASSERT_EQ(r.exit_code, 0) << kv << ": " << r.err;
    EXPECT_NE(r.out.find("limiting stage"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("k_load"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("byte floor"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("k_prep") != std::string::npos, std::string(kv) == "k8v8") << "K16 graphs have no k_prep:\n"
                                                                                    << r.out;

    CliResult j = run_cli({"predict", "--gpu", "h200", "--kv", kv, "--json"});
    ASSERT_EQ(j.exit_code, 0) << j.err;
    json p = json::parse(j.out);
    // The II is the busiest agent's summed stage cost.
    std::map<std::string, double> busy;
    std::set<std::string> stages;
    for (const auto& s : p["stages"]) {
      stages.insert(s["stage"].get<std::string>());
      if (s["agent"] != "once") busy[s["agent"].get<std::string>()] += s["cost_us"].get<double>();
    }
    double max_busy = 0;
    for (const auto& [agent, t] : busy) max_busy = std::max(max_busy, t);
    EXPECT_NEAR(p["ii_us"].get<double>(), max_busy, 1e-9 * max_busy);
    EXPECT_TRUE(stages.count(p["limiting_stage"].get<std::string>()));
    EXPECT_GT(p["latency_us"].get<double>(), 0);
    EXPECT_GT(p["floor_us"].get<double>(), 0);
  }
}

TEST_F(CliTest, GraphAsDotAndJson) {
  CliResult dot = run_cli({"graph", "--kv", "k8v8", "--format", "dot"});
  ASSERT_EQ(dot.exit_code, 0) << dot.err;
  EXPECT_NE(dot.out.find("digraph"), std::string::npos);
  EXPECT_NE(dot.out.find("k_prep"), std::string::npos);

  CliResult js = run_cli({"graph", "--kv", "k16v8", "--format", "json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  json g = json::parse(js.out);
  std::set<std::string> nodes;
  for (const auto& n : g["nodes"]) nodes.insert(n["stage"].get<std::string>());
  EXPECT_TRUE(nodes.count("k_load"));
  EXPECT_TRUE(nodes.count("pv"));
  EXPECT_FALSE(nodes.count("k_prep"));
  EXPECT_FALSE(g["edges"].empty());
}

TEST_F(CliTest, ReportCsvAndMarkdownHaveOneRowPerCase) {
  std::string db = make_sim_db("a.sqlite");
  run_cli(concat({"run", "--backend", "sim", "--kv", "k16v16", "--db", db}, kSmallShape));
  ASSERT_EQ(case_count(db), 2);
  CliResult csv = run_cli({"report", "--db", db, "--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  auto rows = lines(csv.out);
  ASSERT_EQ(rows.size(), 3u) << csv.out;
  for (const char* column : {"backend",
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
    EXPECT_NE(("," + rows[0] + ",").find(std::string(",") + column + ","), std::string::npos) << column;

  CliResult md = run_cli({"report", "--db", db, "--format", "md"});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_EQ(lines(md.out).size(), 4u) << md.out;  // header, rule, 2 rows
  CliResult filtered = run_cli({"report", "--db", db, "--format", "csv", "--kv", "k16v16"});
  ASSERT_EQ(filtered.exit_code, 0) << filtered.err;
  EXPECT_EQ(lines(filtered.out).size(), 2u) << filtered.out;
}

// report --runs: one row per run, its cases by status, in every format; filters as for cases.
TEST_F(CliTest, ReportRunsHasOneRowPerRunWithItsCasesByStatus) {
  const std::string db = make_sim_db("runs.sqlite");
  ASSERT_EQ(run_cli(concat({"run", "--backend", "sim", "--kv", "k16v16", "--db", db}, kSmallShape)).exit_code, 0);
  CliResult js = run_cli({"report", "--db", db, "--runs", "--json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const json runs = json::parse(js.out);
  ASSERT_EQ(runs.size(), 2u) << js.out;
  for (const json& run : runs) {
    EXPECT_EQ(run["backend"], "sim");
    EXPECT_EQ(run["cases"], 1);
    EXPECT_EQ(run["ok"], 1);
    EXPECT_EQ(run["failed"], 0);
    EXPECT_EQ(run["run_uuid"].get<std::string>().size(), 36u);
    EXPECT_NE(run["command"].get<std::string>().find("tilepath run"), std::string::npos) << run["command"];
  }
  EXPECT_LT(runs[0]["run_id"].get<int>(), runs[1]["run_id"].get<int>());

  CliResult csv = run_cli({"report", "--db", db, "--runs", "--format", "csv", "--kv", "k16v16"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  const auto rows = lines(csv.out);
  ASSERT_EQ(rows.size(), 2u) << "header and the k16v16 run: " << csv.out;
  EXPECT_EQ(rows[0].rfind("run_id,run_uuid,started_at,", 0), 0u) << rows[0];
  EXPECT_NE(rows[0].find(",cases,ok,failed,unsupported,error,cancelled,command,notes"), std::string::npos) << rows[0];
  EXPECT_EQ(rows[1].rfind(runs[1]["run_id"].dump() + "," + runs[1]["run_uuid"].get<std::string>() + ",", 0), 0u)
      << rows[1];

  CliResult md = run_cli({"report", "--db", db, "--runs"});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_EQ(lines(md.out).size(), 4u) << md.out;  // header, rule, 2 runs
}

// --mma on run, stored with the case, shown as the report's mma column, filtered by
// report --mma; backends that cannot issue wgmma refuse it naming the field.
TEST_F(CliTest, MmaIsSelectableStoredReportedAndRefusedWhereUnsupported) {
  const std::string db = path("mma.sqlite");
  for (const char* mma : {"mma_sync", "wgmma"}) {
    CliResult r = run_cli(concat(
        {"run", "--backend", "sim", "--gpu", "h200", "--kv", "k8v8", "--k-path", "fp8_qk", "--mma", mma, "--db", db},
        kSmallShape));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  CliResult csv = run_cli({"report", "--db", db, "--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  const auto rows = lines(csv.out);
  ASSERT_EQ(rows.size(), 3u) << csv.out;
  std::vector<std::string> header;
  for (std::size_t at = 0, comma; at <= rows[0].size(); at = comma + 1) {
    comma = rows[0].find(',', at);
    if (comma == std::string::npos) comma = rows[0].size();
    header.push_back(rows[0].substr(at, comma - at));
  }
  const auto mma_column = std::find(header.begin(), header.end(), "mma");
  ASSERT_NE(mma_column, header.end()) << rows[0];
  const std::size_t index = static_cast<std::size_t>(mma_column - header.begin());
  std::multiset<std::string> families;
  for (std::size_t row = 1; row < rows.size(); ++row) {
    std::vector<std::string> cells;
    for (std::size_t at = 0, comma; at <= rows[row].size(); at = comma + 1) {
      comma = rows[row].find(',', at);
      if (comma == std::string::npos) comma = rows[row].size();
      cells.push_back(rows[row].substr(at, comma - at));
    }
    ASSERT_GT(cells.size(), index) << rows[row];
    families.insert(cells[index]);
  }
  EXPECT_EQ(families, (std::multiset<std::string>{"mma_sync", "wgmma"}));
  CliResult only = run_cli({"report", "--db", db, "--format", "csv", "--mma", "wgmma"});
  ASSERT_EQ(only.exit_code, 0) << only.err;
  ASSERT_EQ(lines(only.out).size(), 2u) << only.out;
  EXPECT_NE(lines(only.out)[1].find(",wgmma,"), std::string::npos) << only.out;
  expect_one_line_error(run_cli({"report", "--db", db, "--mma", "hmma"}),
                        "--mma: unknown value 'hmma'; allowed: mma_sync|wgmma");

  // The cpu backend emulates mma_sync only: the case is stored as unsupported, naming the field.
  CliResult cpu =
      run_cli(concat({"run", "--backend", "cpu", "--kv", "k8v8", "--mma", "wgmma", "--db", db}, kSmallShape));
  EXPECT_NE(cpu.exit_code, 0);
  EXPECT_NE((cpu.out + cpu.err).find("mma: the cpu backend emulates mma_sync's numerics"), std::string::npos)
      << cpu.out << cpu.err;
  expect_one_line_error(
      run_cli(concat({"run", "--backend", "sim", "--kv", "k8v8", "--mma", "mma.sync", "--db", db}, kSmallShape)),
      "--mma: unknown value 'mma.sync'; allowed: mma_sync|wgmma");

  // predict names the family, and the model refuses wgmma where the GPU has none.
  CliResult predict = run_cli({"predict", "--gpu", "h200", "--k-path", "fp8_qk", "--mma", "wgmma", "--json"});
  ASSERT_EQ(predict.exit_code, 0) << predict.err;
  const json p = json::parse(predict.out);
  EXPECT_EQ(p.at("mma"), "wgmma");
  EXPECT_EQ(p.at("op").at("mma"), "wgmma");
  EXPECT_NE(p.at("notes").get<std::string>().find("wgmma: model-only"), std::string::npos) << p.at("notes");
  CliResult text = run_cli({"predict", "--gpu", "h200"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("matrix instruction mma_sync"), std::string::npos) << text.out;
  CliResult a100 = run_cli({"predict", "--gpu", "a100_sxm", "--kv", "k16v8", "--mma", "wgmma"});
  EXPECT_NE(a100.exit_code, 0);
  EXPECT_NE(a100.err.find("mma: a100_sxm has no wgmma"), std::string::npos) << a100.err;
}

TEST_F(CliTest, ExportSubsetAndMergeWithoutDuplicates) {
  std::string a = make_sim_db("a.sqlite", "k8v8");
  run_cli(concat({"run", "--backend", "sim", "--kv", "k16v8", "--db", a}, kSmallShape));
  std::string b = make_sim_db("b.sqlite", "k16v16");
  ASSERT_EQ(case_count(a), 2);

  std::string subset = path("subset.sqlite");
  CliResult ex = run_cli({"export", "--db", a, "--out", subset, "--kv", "k16v8"});
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  EXPECT_EQ(case_count(subset), 1);
  EXPECT_EQ(RunStore::open_read_only(subset).cases().front().record.op.kv, KvDtype::k16v8);

  // Refuses to overwrite.
  std::string before = read_file(subset);
  CliResult again = run_cli({"export", "--db", a, "--out", subset});
  expect_one_line_error(again, subset);
  EXPECT_EQ(read_file(subset), before);

  std::string merged = path("merged.sqlite");
  CliResult m = run_cli({"merge", a, b, "--out", merged});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_EQ(case_count(merged), 3);
  EXPECT_EQ(RunStore::open_read_only(merged).runs().size(), 3u);

  // Merging a database with its own subset adds no run twice.
  std::string merged2 = path("merged2.sqlite");
  ASSERT_EQ(run_cli({"merge", a, subset, "--out", merged2}).exit_code, 0);
  EXPECT_EQ(RunStore::open_read_only(merged2).runs().size(), 2u);

  // More than two inputs: the two filtered exports of a and b merge into every case.
  std::string k16v8 = subset, rest = path("rest.sqlite"), all = path("all.sqlite");
  ASSERT_EQ(run_cli({"export", "--db", a, "--out", rest, "--kv", "k8v8"}).exit_code, 0);
  CliResult three = run_cli({"merge", k16v8, rest, b, "--out", all, "--json"});
  ASSERT_EQ(three.exit_code, 0) << three.err;
  EXPECT_EQ(case_count(all), 3) << three.out;
  EXPECT_TRUE(json::parse(three.out)["conflicts"].empty());
  expect_one_line_error(run_cli({"merge", a, "--out", path("one.sqlite")}), "inputs");

  // --replace: the k8v8 case measured again in a new file supersedes a's, the k16v8 one stays.
  std::string regen = make_sim_db("regen.sqlite", "k8v8"), replaced = path("replaced.sqlite");
  CliResult r = run_cli({"merge", a, regen, "--out", replaced, "--replace", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["cases_replaced"], 1) << r.out;
  EXPECT_EQ(case_count(replaced), 2);
  const auto runs = RunStore::open_read_only(replaced).runs();
  ASSERT_EQ(runs.size(), 3u);  // a's k8v8 run (now without cases), a's k16v8 run, regen's
  EXPECT_NE(runs[0].notes.find("[1 case replaced by run " + runs[2].uuid + " of regen.sqlite]"), std::string::npos)
      << runs[0].notes;
  EXPECT_EQ(runs[1].notes.find("replaced"), std::string::npos) << runs[1].notes;
  CliResult text = run_cli({"merge", a, regen, "--out", path("replaced2.sqlite"), "--replace"});
  EXPECT_NE(text.out.find("1 replaced by a later input's"), std::string::npos) << text.out;
}

TEST_F(CliTest, BadInputGivesOneLineAndLeavesTheDatabaseUntouched) {
  std::string db = make_sim_db("keep.sqlite");
  const std::string original = read_file(db);
  ASSERT_FALSE(original.empty());

  // Bad flag.
  expect_one_line_error(run_cli({"run", "--backend", "sim", "--bogus", "--db", db}), "--bogus");
  // Unknown enum name, with the allowed values.
  CliResult e = run_cli(concat({"run", "--backend", "sim", "--kv", "k4v4", "--db", db}, kSmallShape));
  expect_one_line_error(e, "k4v4");
  EXPECT_NE(e.err.find("k8v8"), std::string::npos) << e.err;
  // An invalid operating point.
  CliResult bad_heads =
      run_cli({"run", "--backend", "sim", "--kv", "k8v8", "--batch", "1", "--context", "64", "--q-heads", "32",
               "--kv-heads", "3", "--head-dim", "128", "--page-size", "16", "--db", db});
  expect_one_line_error(bad_heads, "kv_heads");
  // Unknown backend.
  expect_one_line_error(run_cli(concat({"run", "--backend", "nope", "--kv", "k8v8", "--db", db}, kSmallShape)), "nope");
  // Malformed spec, unknown enum and wrong type in a spec.
  write_file(path("broken.json"), "{\"axes\": {\"batch\": [1,]}");
  expect_one_line_error(run_cli({"sweep", path("broken.json"), "--backend", "sim", "--db", db}), "broken.json");
  std::string wrong_enum = spec("enum.json", {{"axes", {{"kv", {"k8v8", "k9v9"}}}}});
  expect_one_line_error(run_cli({"sweep", wrong_enum, "--backend", "sim", "--db", db}), "axes.kv[1]");
  std::string wrong_type = spec("type.json", {{"axes", {{"batch", {1, "two"}}}}});
  expect_one_line_error(run_cli({"sweep", wrong_type, "--backend", "sim", "--db", db}), "axes.batch[1]");
  // Report / export with bad values.
  expect_one_line_error(run_cli({"report", "--db", db, "--format", "xml"}), "xml");
  expect_one_line_error(run_cli({"report", "--db", db, "--kv", "k1v1"}), "k1v1");
  EXPECT_EQ(read_file(db), original) << "the database changed";

  // A spec error must not create the database either.
  std::string fresh = path("never.sqlite");
  expect_one_line_error(run_cli({"sweep", wrong_type, "--backend", "sim", "--db", fresh}), "axes.batch[1]");
  EXPECT_FALSE(fs::exists(fresh));

  // Files that are not tilepath databases.
  std::string foreign = path("notes.txt");
  write_file(foreign, "these are not the runs you are looking for\n");
  const std::string foreign_bytes = read_file(foreign);
  expect_one_line_error(run_cli({"report", "--db", foreign}), foreign);
  expect_one_line_error(run_cli(concat({"run", "--backend", "sim", "--kv", "k8v8", "--db", foreign}, kSmallShape)),
                        foreign);
  std::string ok_spec = spec("ok.json", {{"backend", "sim"}, {"axes", {{"batch", {1, 2}}}}});
  expect_one_line_error(run_cli({"sweep", ok_spec, "--db", foreign}), foreign);
  std::string out = path("out.sqlite");
  expect_one_line_error(run_cli({"export", "--db", foreign, "--out", out}), foreign);
  EXPECT_FALSE(fs::exists(out));
  expect_one_line_error(run_cli({"merge", db, foreign, "--out", out}), foreign);
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(read_file(foreign), foreign_bytes);
  EXPECT_EQ(read_file(db), original);
}

TEST_F(CliTest, OperatingPointFlagsAreDecimalAndErrorsNameTheFlag) {
  CliResult r = run_cli({"predict", "--batch", "010", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["op"]["batch"], 10);  // decimal, never octal
  r = run_cli({"predict", "--batch", "0x10"});
  EXPECT_EQ(r.exit_code, 2);
  expect_one_line_error(r, "--batch: '0x10' is not a decimal integer; allowed: 1..4096");
  r = run_cli({"predict", "--splits", ""});
  EXPECT_EQ(r.exit_code, 2);
  expect_one_line_error(r, "--splits");
  r = run_cli({"predict", "--context-lengths", "100,x"});
  expect_one_line_error(r, "--context-lengths[1]");
}

}  // namespace
}  // namespace tilepath::testing
