// `tilepath gate` end to end: JSON, stored quality rows, errors.

#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli_process.h"
#include "core/store/run_store.h"

namespace tilepath::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<std::string> kSmall = {"--batch", "1", "--context", "512", "--q-heads", "8", "--kv-heads", "2"};

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class CliGateTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = make_temp_dir("gate"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(CliGateTest, JsonHasPassedAndTheMetrics) {
  CliResult r = run_cli(with({"gate", "--distribution", "qwen_bias", "--json"}, kSmall));
  EXPECT_EQ(r.exit_code, 1) << r.err;  // plain K8/V8 fails on Qwen-like keys
  const json j = json::parse(r.out);
  EXPECT_FALSE(j["passed"].get<bool>());
  for (const char* m : {"rel_l2", "max_abs", "kl", "top8", "top32"}) EXPECT_TRUE(j["metrics"][m].is_number()) << m;
  EXPECT_EQ(j["distribution"], "qwen_bias");
  EXPECT_FALSE(j["failures"].empty());

  r = run_cli(with({"gate", "--distribution", "qwen_bias", "--k-repr", "prebias", "--json"}, kSmall));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(json::parse(r.out)["passed"].get<bool>());
}

TEST_F(CliGateTest, AllComparesTheRepresentationsAndDbStoresTheirRows) {
  const std::string db = dir_ + "/gate.sqlite";
  CliResult r = run_cli(with({"gate", "--distribution", "qwen_bias", "--all", "--db", db, "--json"}, kSmall));
  const json j = json::parse(r.out);
  ASSERT_EQ(j["representations"].size(), 6u);  // plain and prebias pre/post, mxfp8, K16/V8
  const RunStore store = RunStore::open_read_only(db);
  const std::vector<CaseSummary> cases = store.cases();
  ASSERT_EQ(cases.size(), 6u);
  for (const CaseSummary& c : cases) {
    EXPECT_EQ(c.backend, "gate");
    ASSERT_EQ(c.record.quality.size(), 5u);
    for (const QualityRow& q : c.record.quality) EXPECT_EQ(q.distribution, "qwen_bias");
    EXPECT_EQ(c.record.artifacts.size(), 0u);  // listed without bytes
    EXPECT_EQ(c.artifacts.size(), 1u);
    EXPECT_EQ(c.artifacts[0].name, "gate.json");
  }
  // The dispatch table reads these rows: the failing representations are excluded.
  r = run_cli({"dispatch", "--db", db, "--distribution", "qwen_bias", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(CliGateTest, BadInputIsOneLine) {
  CliResult r = run_cli(with({"gate", "--distribution", "lognormal"}, kSmall));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(lines(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find("qwen_bias"), std::string::npos) << r.err;  // names the known ones
  const std::string npy = dir_ + "/k.npy";
  write_file(npy, "not an npy file");
  r = run_cli(with({"gate", "--distribution", npy}, kSmall));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(lines(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find(npy), std::string::npos) << r.err;
  r = run_cli(with({"gate", "--thresholds", "{\"colour\": 1}"}, kSmall));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("colour"), std::string::npos) << r.err;
  r = run_cli(with({"gate", "--dof", "3"}, kSmall));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("Student-t"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tilepath::testing
