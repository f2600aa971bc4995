// GPU model files (models/gpus/*.json) and their loader.

#include "core/perf/gpu_model.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using tilepath::perf::GpuModel;
using tilepath::perf::load_gpu_model;
using tilepath::perf::load_gpu_model_file;
using tilepath::perf::load_gpu_models;

namespace {

const std::string kModelsDir = std::string(TILEPATH_SOURCE_DIR) + "/models";

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// A scratch models directory, removed at the end of the test.
class ScratchModels {
 public:
  ScratchModels() {
    root_ = fs::temp_directory_path() /
            ("tilepath_gpu_model_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(root_ / "gpus");
  }
  ~ScratchModels() { fs::remove_all(root_); }
  std::string dir() const { return root_.string(); }
  std::string write(const std::string& id, const std::string& text) const {
    const fs::path p = root_ / "gpus" / (id + ".json");
    std::ofstream(p) << text;
    return p.string();
  }
  std::string write(const std::string& id, const nlohmann::json& j) const { return write(id, j.dump(2)); }

 private:
  fs::path root_;
  static inline int counter_ = 0;
};

// Message of the exception f throws ("" if none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

nlohmann::json h200_json() { return read_json(kModelsDir + "/gpus/h200.json"); }

}  // namespace

TEST(GpuModel, EveryShippedFileLoads) {
  const auto gpus = load_gpu_models(kModelsDir);
  std::set<std::string> ids;
  for (const auto& g : gpus) ids.insert(g.id);
  for (const char* required : {"h100_sxm", "h200", "b200", "mi300x", "a100_sxm"}) {
    EXPECT_TRUE(ids.count(required)) << required << " missing from " << kModelsDir << "/gpus";
  }
  for (const auto& g : gpus) {
    SCOPED_TRACE(g.id);
    EXPECT_FALSE(g.name.empty());
    EXPECT_FALSE(g.arch.empty());
    EXPECT_GT(g.sm_count, 0);
    EXPECT_GT(g.clock_mhz, 0);
    EXPECT_GT(g.read_bandwidth_gbps, 0);
    EXPECT_LE(g.read_bandwidth_gbps, g.hbm_bandwidth_gbps);
    EXPECT_GT(g.l2_bytes, 0);
    EXPECT_GT(g.l2_read_bandwidth_gbps, g.read_bandwidth_gbps) << "L2 should out-stream HBM";
    EXPECT_GT(g.cvt_fp8_operand_per_sm_per_clk, 0);
    EXPECT_GT(g.sfu_exp_per_sm_per_clk, 0);
    ASSERT_NE(g.path("bf16_bf16"), nullptr);
    EXPECT_TRUE(g.path("bf16_bf16")->supported);
    EXPECT_GT(g.path("bf16_bf16")->dense_tflops, g.fp32_tflops);
  }
}

TEST(GpuModel, EveryNumericFieldOfEveryFileHasASource) {
  for (const auto& entry : fs::directory_iterator(kModelsDir + "/gpus")) {
    SCOPED_TRACE(entry.path().string());
    const auto j = read_json(entry.path().string());
    int numeric_fields = 0;
    auto check = [&](const nlohmann::json& q, const std::string& where) {
      ASSERT_TRUE(q.is_object()) << where;
      ASSERT_TRUE(q.contains("source")) << where;
      EXPECT_TRUE(q["source"].is_string() && !q["source"].get<std::string>().empty()) << where;
      EXPECT_TRUE(q.contains("unit")) << where;
      ++numeric_fields;
    };
    for (const auto& [key, value] : j.items()) {
      if (value.is_object() && value.contains("value")) check(value, key);
      EXPECT_FALSE(value.is_number()) << key << " is a bare number without unit and source";
    }
    for (const auto& [name, path] : j["matrix_paths"].items()) check(path["dense_tflops"], "matrix_paths." + name);
    EXPECT_GE(numeric_fields, 14);
    // The loader keeps the sources for the UI, one per numeric field.
    const GpuModel g = load_gpu_model_file(entry.path().string());
    EXPECT_EQ(static_cast<int>(g.sources.size()), numeric_fields);
  }
}

TEST(GpuModel, ReadBandwidthIsMeasuredOnTheLentGpusAndOthersSayEstimate) {
  // The H200 and the H100 were lent and measured (bench/results/h100-model-check/); a GPU we
  // could not reach says how its number was derived.
  const auto gpus = load_gpu_models(kModelsDir);
  for (const auto& g : gpus) {
    SCOPED_TRACE(g.id);
    const std::string& source = g.sources.at("read_bandwidth");
    if (g.id == "h200" || g.id == "h100_sxm") {
      EXPECT_DOUBLE_EQ(g.read_bandwidth_gbps, g.id == "h200" ? 4550 : 3184);
      EXPECT_EQ(source.rfind("measured", 0), 0u) << source;
    } else {
      EXPECT_NE(source.find("estimate"), std::string::npos) << source;
    }
  }
}

TEST(GpuModel, MatrixPathsOnlyWhereTheHardwareHasThem) {
  for (const auto& g : load_gpu_models(kModelsDir)) {
    SCOPED_TRACE(g.id);
    // No GPU here has a BF16 x E4M3 mixed MMA.
    ASSERT_NE(g.path("bf16_e4m3"), nullptr);
    EXPECT_FALSE(g.path("bf16_e4m3")->supported);
    EXPECT_FALSE(g.path("bf16_e4m3")->note.empty());
    for (const auto& p : g.matrix_paths) {
      if (p.supported) {
        EXPECT_GT(p.dense_tflops, 0) << p.name;
      }
    }
  }
  const GpuModel a100 = load_gpu_model("a100_sxm", kModelsDir);
  EXPECT_FALSE(a100.path("e4m3_e4m3")->supported);
  EXPECT_NE(a100.path("e4m3_e4m3")->note.find("FP8"), std::string::npos);

  const GpuModel mi300x = load_gpu_model("mi300x", kModelsDir);
  EXPECT_FALSE(mi300x.path("e4m3_e4m3")->supported);
  EXPECT_NE(mi300x.path("e4m3_e4m3")->note.find("FNUZ"), std::string::npos);
  EXPECT_EQ(mi300x.arch, "gfx942");

  for (const char* id : {"h100_sxm", "h200", "b200"}) {
    const GpuModel g = load_gpu_model(id, kModelsDir);
    EXPECT_TRUE(g.path("e4m3_e4m3")->supported) << id;
    EXPECT_GT(g.path("e4m3_e4m3")->dense_tflops, g.path("bf16_bf16")->dense_tflops) << id;
  }
}

TEST(GpuModel, UnknownIdListsTheKnownOnes) {
  const std::string message = error_of([] { load_gpu_model("h900", kModelsDir); });
  EXPECT_NE(message.find("h900"), std::string::npos) << message;
  EXPECT_NE(message.find("h200"), std::string::npos) << message;
  EXPECT_NE(message.find("mi300x"), std::string::npos) << message;
}

TEST(GpuModel, SyntaxErrorNamesTheFile) {
  ScratchModels scratch;
  const std::string file = scratch.write("broken", std::string("{ \"name\": \"x\", "));
  const std::string message = error_of([&] { load_gpu_models(scratch.dir()); });
  EXPECT_NE(message.find(file), std::string::npos) << message;
  EXPECT_NE(message.find("not valid JSON"), std::string::npos) << message;
}

TEST(GpuModel, MissingSourceNamesFileAndField) {
  ScratchModels scratch;
  auto j = h200_json();
  j["sm_count"].erase("source");
  const std::string file = scratch.write("nosource", j);
  const std::string message = error_of([&] { load_gpu_model_file(file); });
  EXPECT_NE(message.find(file), std::string::npos) << message;
  EXPECT_NE(message.find("sm_count.source"), std::string::npos) << message;
}

TEST(GpuModel, WrongUnitNamesFieldAndAllowedUnits) {
  ScratchModels scratch;
  auto j = h200_json();
  j["hbm_bandwidth"]["unit"] = "TB/s";
  j["hbm_bandwidth"]["value"] = 4.8;
  const std::string file = scratch.write("tbps", j);
  const std::string message = error_of([&] { load_gpu_model_file(file); });
  EXPECT_NE(message.find("hbm_bandwidth.unit"), std::string::npos) << message;
  EXPECT_NE(message.find("GB/s"), std::string::npos) << message;
}

TEST(GpuModel, MissingOrBadMatrixPathIsAnError) {
  ScratchModels scratch;
  auto missing = h200_json();
  missing["matrix_paths"].erase("e4m3_e4m3");
  const std::string m1 = error_of([&] { load_gpu_model_file(scratch.write("missing", missing)); });
  EXPECT_NE(m1.find("matrix_paths.e4m3_e4m3"), std::string::npos) << m1;

  auto zero_rate = h200_json();
  zero_rate["matrix_paths"]["bf16_bf16"]["dense_tflops"]["value"] = 0;
  const std::string m2 = error_of([&] { load_gpu_model_file(scratch.write("zero", zero_rate)); });
  EXPECT_NE(m2.find("matrix_paths.bf16_bf16.dense_tflops.value"), std::string::npos) << m2;

  auto not_bool = h200_json();
  not_bool["matrix_paths"]["bf16_e4m3"]["supported"] = "no";
  const std::string m3 = error_of([&] { load_gpu_model_file(scratch.write("notbool", not_bool)); });
  EXPECT_NE(m3.find("matrix_paths.bf16_e4m3.supported"), std::string::npos) << m3;
}

// wgmma (the operating point's mma) only on Hopper: sm_90a-only in the PTX ISA, so not on
// A100 (sm_80), B200 (sm_100a: tcgen05.mma) or MI300X (MFMA); mma_sync everywhere.
TEST(GpuModel, WgmmaOnlyOnHopper) {
  for (const auto& g : load_gpu_models(kModelsDir)) {
    SCOPED_TRACE(g.id);
    ASSERT_NE(g.instruction("mma_sync"), nullptr);
    ASSERT_NE(g.instruction("wgmma"), nullptr);
    EXPECT_TRUE(g.instruction("mma_sync")->supported);
    EXPECT_EQ(g.instruction("wgmma")->supported, g.arch == "sm_90a");
    for (const auto& mi : g.matrix_instructions) EXPECT_FALSE(mi.note.empty()) << mi.name;
  }
  for (const char* id : {"h100_sxm", "h200"})
    EXPECT_TRUE(load_gpu_model(id, kModelsDir).instruction("wgmma")->supported);
  for (const char* id : {"a100_sxm", "b200", "mi300x"})
    EXPECT_FALSE(load_gpu_model(id, kModelsDir).instruction("wgmma")->supported) << id;
}

TEST(GpuModel, MissingOrUnknownMatrixInstructionIsAnError) {
  ScratchModels scratch;
  auto missing = h200_json();
  missing["matrix_instructions"].erase("wgmma");
  const std::string m1 = error_of([&] { load_gpu_model_file(scratch.write("missing", missing)); });
  EXPECT_NE(m1.find("field 'matrix_instructions.wgmma': missing; required keys: mma_sync, wgmma"), std::string::npos)
      << m1;

  auto none = h200_json();
  none.erase("matrix_instructions");
  const std::string m2 = error_of([&] { load_gpu_model_file(scratch.write("none", none)); });
  EXPECT_NE(m2.find("matrix_instructions"), std::string::npos) << m2;

  auto unknown = h200_json();
  unknown["matrix_instructions"]["tcgen05"] = {{"supported", true}, {"note", "x"}};
  const std::string m3 = error_of([&] { load_gpu_model_file(scratch.write("unknown", unknown)); });
  EXPECT_NE(m3.find("field 'matrix_instructions.tcgen05': unknown matrix instruction family; allowed: mma_sync|wgmma"),
            std::string::npos)
      << m3;

  auto no_note = h200_json();
  no_note["matrix_instructions"]["wgmma"]["note"] = "";
  const std::string m4 = error_of([&] { load_gpu_model_file(scratch.write("nonote", no_note)); });
  EXPECT_NE(m4.find("matrix_instructions.wgmma.note"), std::string::npos) << m4;
}

TEST(GpuModel, ReadBandwidthAboveDatasheetIsRejected) {
  ScratchModels scratch;
  auto j = h200_json();
  j["read_bandwidth"]["value"] = 5000;
  const std::string message = error_of([&] { load_gpu_model_file(scratch.write("fast", j)); });
  EXPECT_NE(message.find("read_bandwidth"), std::string::npos) << message;
}

TEST(GpuModel, ModelsDirFollowsTheEnvironment) {
  const char* old = std::getenv("TILEPATH_MODELS_DIR");
  const std::string saved = old ? old : "";
  ScratchModels scratch;
  scratch.write("only_one", h200_json());
  setenv("TILEPATH_MODELS_DIR", scratch.dir().c_str(), 1);
  EXPECT_EQ(tilepath::perf::models_dir(), scratch.dir());
  const auto gpus = load_gpu_models();
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].id, "only_one");

  setenv("TILEPATH_MODELS_DIR", "/nonexistent/tilepath/models", 1);
  const std::string message = error_of([] { tilepath::perf::models_dir(); });
  EXPECT_NE(message.find("TILEPATH_MODELS_DIR"), std::string::npos) << message;

  unsetenv("TILEPATH_MODELS_DIR");
  EXPECT_TRUE(fs::is_directory(fs::path(tilepath::perf::models_dir()) / "gpus"));
  if (old) setenv("TILEPATH_MODELS_DIR", saved.c_str(), 1);
}
