// `tilepath run --profile` (app/cli/ncu_profile.h) without a GPU: a stand-in `ncu` on PATH
// that records its arguments and prints a CSV in ncu's raw-page layout
// (tests/core/fixtures/ncu-raw-k8v8.csv, hand-written); what it prints lands on the stored
// case, with the raw CSV as an artifact.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/cli/ncu_profile.h"

using namespace tilepath;
using namespace tilepath::cli;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class NcuProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tilepath-ncu-profile-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "bin");
    old_path_ = std::getenv("PATH") ? std::getenv("PATH") : "";
    setenv("PATH", ((dir_ / "bin").string() + ":" + old_path_).c_str(), 1);
    store_.emplace(RunStore::open((dir_ / "runs.sqlite").string()));
    RunInfo run;
    run.backend = "cuda";
    run.device = "NVIDIA H200";
    const std::int64_t run_id = store_->begin_run(run);
    rec_.op.batch = 64;
    rec_.op.context = 4096;
    rec_.op.kv = KvDtype::k8v8;
    rec_.op.k_path = KPath::fp8_qk;
    rec_.op.mode = TransformMode::k_only;
    rec_.status = CaseStatus::ok;
    rec_.case_key = rec_.op.key();
    rec_.measurements = {{"latency_us", 128.9, "us"}};
    store_->add_case(run_id, rec_);
    store_->finish_run(run_id);
  }
  void TearDown() override {
    setenv("PATH", old_path_.c_str(), 1);
    store_.reset();
    fs::remove_all(dir_);
  }
  // A stand-in ncu: records its arguments one per line, prints `output`, exits with `status`.
  void fake_ncu(const std::string& output_file, int status) {
    const fs::path script = dir_ / "bin" / "ncu";
    std::ofstream(script) << "#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done > '" << (dir_ / "args").string()
                          << "'\ncat '" << output_file << "'\nexit " << status << "\n";
    fs::permissions(script, fs::perms::owner_all);
  }

  fs::path dir_;
  std::string old_path_;
  std::optional<RunStore> store_;
  CaseRecord rec_;
};

const std::string kFixture = std::string(TILEPATH_TEST_DATA_DIR) + "/core/fixtures/ncu-raw-k8v8.csv";

}  // namespace

TEST_F(NcuProfile, WhatNcuMeasuredLandsOnTheCaseWithTheRawCsv) {
  fake_ncu(kFixture, 0);
  ASSERT_EQ(find_ncu(), (dir_ / "bin" / "ncu").string());
  const ProfileOutcome out = profile_case(*store_, rec_, {"cuda", 0, "gaussian", 5});
  ASSERT_TRUE(out.ran) << out.why;
  EXPECT_GE(out.measurements, 9);
  const CaseRecord stored = store_->load_case(rec_.id, /*with_artifacts=*/true);
  EXPECT_EQ(stored.measurement("ncu_dram_bytes_read"), 537395200.0);
  EXPECT_EQ(stored.measurement("ncu_stall_long_scoreboard_cycles"), 1.80);
  EXPECT_DOUBLE_EQ(stored.kernel.occupancy_achieved, 0.2347);
  EXPECT_EQ(stored.measurement("latency_us"), 128.9) << "the run's own measurements stay";
  ASSERT_EQ(stored.artifacts.size(), 1u);
  EXPECT_EQ(stored.artifacts[0].name, "ncu-profile.csv");
  EXPECT_EQ(std::string(stored.artifacts[0].data.begin(), stored.artifacts[0].data.end()), read(kFixture));
  // The profiled run: clocks as they are, CSV of the raw page, the main kernel, this very case.
  const std::string args = read(dir_ / "args");
  for (const char* expected :
       {"--clock-control\nnone\n", "--csv\n--page\nraw\n",
        "--kernel-name\nregex:decode_attention_kernel|decode_wgmma_kernel\n", "--backend\ncuda\n", "--batch\n64\n",
        "--context\n4096\n", "--k-path\nfp8_qk\n", "--mode\nk_only\n", "--no-ablations\n", "--seed\n5\n"})
    EXPECT_NE(args.find(expected), std::string::npos) << expected << " not in:\n" << args;
}

TEST_F(NcuProfile, SkippedWithTheReasonWhereItCannotRun) {
  ProfileOutcome out = profile_case(*store_, rec_, {"cpu", 0, "gaussian", 0});
  EXPECT_FALSE(out.ran);
  EXPECT_NE(out.why.find("profiles cuda cases"), std::string::npos) << out.why;
  setenv("PATH", (dir_ / "bin").string().c_str(), 1);  // no ncu there
  out = profile_case(*store_, rec_, {"cuda", 0, "gaussian", 0});
  EXPECT_FALSE(out.ran);
  EXPECT_EQ(out.why, "ncu is not on PATH");
}

TEST_F(NcuProfile, AFailedOrUnusableProfileThrowsNamingTheKeptOutput) {
  fake_ncu(kFixture, 3);
  try {
    profile_case(*store_, rec_, {"cuda", 0, "gaussian", 0});
    ADD_FAILURE() << "a failed ncu was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("ncu exited with 3"), std::string::npos) << e.what();
  }
  const fs::path text = dir_ / "text.txt";
  std::ofstream(text) << "==PROF== Disconnected\n";
  fake_ncu(text.string(), 0);
  EXPECT_THROW(profile_case(*store_, rec_, {"cuda", 0, "gaussian", 0}), std::runtime_error);
  EXPECT_FALSE(store_->load_case(rec_.id).measurement("ncu_dram_bytes_read")) << "nothing stored";
}
