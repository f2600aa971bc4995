#pragma once
// Helpers shared by the run-store tests: temp dirs, file bytes, sample records,
// and field-by-field comparison of CaseRecords (NaN-aware).

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/store/run_store.h"

namespace tilepath::store_test {

namespace fs = std::filesystem;

// A fresh directory under the system temp dir, removed with its contents at scope end.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name =
        std::string("tilepath_store_") + (info ? info->name() : "test") + "_" + std::to_string(::getpid());
    dir_ = fs::temp_directory_path() / name;
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  const fs::path& path() const { return dir_; }

 private:
  fs::path dir_;
};

inline std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Runs SQL on a file through a plain SQLite connection (not the store).
inline void raw_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  const std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << msg;
}

inline RunInfo sample_run(const std::string& backend = "cpu", const std::string& device = "cpu0") {
  RunInfo run;
  run.tool_version = "0.1.0";
  run.git_revision = "abc1234";
  run.host = "testhost";
  run.backend = backend;
  run.backend_version = "1.2";
  run.device = device;
  run.command = "tilepath sweep spec.json";
  run.notes = "unit test";
  return run;
}

// A record with every field set: OperatingPoint defaults plus a ragged batch,
// kernel metadata, all child row kinds and two artifacts (one empty).
inline CaseRecord sample_case(int variant = 0) {
  CaseRecord rec;
  rec.op.context_lengths.resize(rec.op.batch);
  for (int i = 0; i < rec.op.batch; ++i) rec.op.context_lengths[i] = 128 + 61 * i + variant;
  rec.case_key = rec.op.key() + "@cpu/cpu0#" + std::to_string(variant);
  rec.status = CaseStatus::ok;
  rec.message = "fine";
  rec.finished_at = "2026-11-29T12:00:00Z";
  rec.kernel.kernel_name = "decode_k8v8_full<128,64>";
  rec.kernel.cubin_sha256 = std::string(64, 'a');
  rec.kernel.regs_per_thread = 168;
  rec.kernel.smem_static_bytes = 1024;
  rec.kernel.smem_dynamic_bytes = 98304;
  rec.kernel.occupancy_theoretical = 0.25;
  rec.kernel.occupancy_achieved = 0.2375;
  rec.kernel.grid[0] = 132;
  rec.kernel.grid[1] = 8;
  rec.kernel.grid[2] = 1 + variant;
  rec.kernel.block[0] = 384;
  rec.kernel.block[1] = 1;
  rec.kernel.block[2] = 1;
  rec.kernel.splits = 4;
  rec.measurements = {{"latency_us", 123.5 + variant, "us"},
                      {"tile_interval_us", 0.731, "us"},
                      {"bytes_moved", 1.5e9, "B"},
                      {"not_measured", NAN, ""}};
  rec.stage_costs = {{Stage::k_load, CostMethod::removed, 0.3},
                     {Stage::k_prep, CostMethod::isolated, 0.21},
                     {Stage::combine, CostMethod::model, 1.75},
                     {Stage::pv, CostMethod::doubled, NAN}};
  rec.predictions = {
      {0.42, "k_prep", "qk_mma", 0.8, "ii_model/v1", R"({"ii_us":0.42})", std::vector<std::string>{"accum"}}};
  rec.quality = {{"rel_l2", 0.012, 0.02, true, "qwen_bias"}, {"kl_attention", 3e-4, NAN, false, "npy:k.npy"}};
  rec.artifacts = {{"ncu.csv", "text/csv", {'a', ',', 'b', '\n', 0, 1, 2}},
                   {"empty.bin", "application/octet-stream", {}}};
  return rec;
}

inline void expect_same_double(double a, double b, const std::string& what) {
  if (std::isnan(a) || std::isnan(b))
    EXPECT_TRUE(std::isnan(a) && std::isnan(b)) << what << ": " << a << " vs " << b;
  else
    EXPECT_EQ(a, b) << what;
}

// Every stored field of `actual` equals `expected` (ids excluded unless given).
inline void expect_same_case(const CaseRecord& expected, const CaseRecord& actual, bool compare_artifacts) {
  EXPECT_EQ(expected.op, actual.op);
  EXPECT_EQ(expected.case_key, actual.case_key);
  EXPECT_EQ(expected.status, actual.status);
  EXPECT_EQ(expected.message, actual.message);
  EXPECT_EQ(expected.finished_at, actual.finished_at);
  const KernelMeta &ek = expected.kernel, &ak = actual.kernel;
  EXPECT_EQ(ek.kernel_name, ak.kernel_name);
  EXPECT_EQ(ek.cubin_sha256, ak.cubin_sha256);
  EXPECT_EQ(ek.regs_per_thread, ak.regs_per_thread);
  EXPECT_EQ(ek.smem_static_bytes, ak.smem_static_bytes);
  EXPECT_EQ(ek.smem_dynamic_bytes, ak.smem_dynamic_bytes);
  expect_same_double(ek.occupancy_theoretical, ak.occupancy_theoretical, "occupancy_theoretical");
  expect_same_double(ek.occupancy_achieved, ak.occupancy_achieved, "occupancy_achieved");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(ek.grid[i], ak.grid[i]) << "grid " << i;
    EXPECT_EQ(ek.block[i], ak.block[i]) << "block " << i;
  }
  EXPECT_EQ(ek.splits, ak.splits);

  ASSERT_EQ(expected.measurements.size(), actual.measurements.size());
  for (std::size_t i = 0; i < expected.measurements.size(); ++i) {
    EXPECT_EQ(expected.measurements[i].name, actual.measurements[i].name);
    expect_same_double(expected.measurements[i].value, actual.measurements[i].value, expected.measurements[i].name);
    EXPECT_EQ(expected.measurements[i].unit, actual.measurements[i].unit);
  }
  ASSERT_EQ(expected.stage_costs.size(), actual.stage_costs.size());
  for (std::size_t i = 0; i < expected.stage_costs.size(); ++i) {
    EXPECT_EQ(expected.stage_costs[i].stage, actual.stage_costs[i].stage);
    EXPECT_EQ(expected.stage_costs[i].method, actual.stage_costs[i].method);
    expect_same_double(expected.stage_costs[i].cost_us, actual.stage_costs[i].cost_us, "cost_us");
  }
  ASSERT_EQ(expected.predictions.size(), actual.predictions.size());
  for (std::size_t i = 0; i < expected.predictions.size(); ++i) {
    const auto &e = expected.predictions[i], &a = actual.predictions[i];
    expect_same_double(e.ii_us, a.ii_us, "ii_us");
    EXPECT_EQ(e.limiting_stage, a.limiting_stage);
    EXPECT_EQ(e.limiting_agent, a.limiting_agent);
    expect_same_double(e.overlap_efficiency, a.overlap_efficiency, "overlap_efficiency");
    EXPECT_EQ(e.model, a.model);
    EXPECT_EQ(e.detail_json, a.detail_json);
    EXPECT_EQ(e.unknown_stages, a.unknown_stages);
  }
  ASSERT_EQ(expected.quality.size(), actual.quality.size());
  for (std::size_t i = 0; i < expected.quality.size(); ++i) {
    const auto &e = expected.quality[i], &a = actual.quality[i];
    EXPECT_EQ(e.metric, a.metric);
    expect_same_double(e.value, a.value, "quality value");
    expect_same_double(e.threshold, a.threshold, "threshold");
    EXPECT_EQ(e.passed, a.passed);
    EXPECT_EQ(e.distribution, a.distribution);
  }
  if (compare_artifacts) {
    ASSERT_EQ(expected.artifacts.size(), actual.artifacts.size());
    for (std::size_t i = 0; i < expected.artifacts.size(); ++i) {
      EXPECT_EQ(expected.artifacts[i].name, actual.artifacts[i].name);
      EXPECT_EQ(expected.artifacts[i].mime, actual.artifacts[i].mime);
      EXPECT_EQ(expected.artifacts[i].data, actual.artifacts[i].data);
    }
  }
}

// Count of rows in a table, read through a plain SQLite connection.
inline long long raw_count(const std::string& path, const std::string& table) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return -1;
  }
  sqlite3_stmt* st = nullptr;
  long long n = -1;
  if (sqlite3_prepare_v2(db, ("SELECT count(*) FROM " + table).c_str(), -1, &st, nullptr) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

}  // namespace tilepath::store_test
