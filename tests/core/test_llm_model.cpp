// LLM attention configurations (models/llms/*.json) and their loader.

#include "core/perf/llm_model.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using tilepath::perf::LlmModel;
using tilepath::perf::load_llm_model;
using tilepath::perf::load_llm_models;

namespace {

const std::string kModelsDir = std::string(TILEPATH_SOURCE_DIR) + "/models";

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(LlmModel, EveryShippedFileLoadsAndIsAValidShape) {
  const auto llms = load_llm_models(kModelsDir);
  std::set<std::string> ids;
  for (const auto& m : llms) {
    SCOPED_TRACE(m.id);
    ids.insert(m.id);
    EXPECT_FALSE(m.source.empty());
    EXPECT_EQ(m.q_heads % m.kv_heads, 0);
    // The shape must be a valid operating point.
    EXPECT_TRUE(m.apply_to(tilepath::OperatingPoint{}).problems().empty());
  }
  for (const char* id : {"llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b", "mistral-7b", "qwen2.5-72b"}) {
    EXPECT_TRUE(ids.count(id)) << id;
  }
}

TEST(LlmModel, QwenHasTheLargeKeyBiasAndItsGroupShape) {
  const LlmModel qwen = load_llm_model("qwen2.5-7b", kModelsDir);
  EXPECT_EQ(qwen.q_heads, 28);
  EXPECT_EQ(qwen.kv_heads, 4);
  EXPECT_EQ(qwen.head_dim, 128);
  EXPECT_TRUE(qwen.has_k_bias);
  EXPECT_EQ(qwen.k_bias_scale, "large");
  const tilepath::OperatingPoint op = qwen.apply_to(tilepath::OperatingPoint{});
  EXPECT_EQ(op.gqa_ratio(), 7);

  const LlmModel llama = load_llm_model("llama-3.1-8b", kModelsDir);
  EXPECT_FALSE(llama.has_k_bias);
  EXPECT_EQ(llama.k_bias_scale, "none");
  EXPECT_EQ(llama.rope, "full");
}

TEST(LlmModel, TheDispatchModelsStateTheirParameterCountWithASource) {
  for (const char* id : {"llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b", "qwen2.5-72b", "mistral-7b"}) {
    const LlmModel m = load_llm_model(id, kModelsDir);
    EXPECT_GT(m.parameters, 1e9) << id;
    EXPECT_FALSE(m.parameters_source.empty()) << id;
    EXPECT_EQ(m.bf16_weight_bytes(), 2 * m.parameters) << id;
  }
  EXPECT_EQ(load_llm_model("glm-4-9b", kModelsDir).parameters, 0);  // not stated: unknown
}

TEST(LlmModel, BadFieldsAreNamed) {
  const fs::path dir = fs::temp_directory_path() / ("tilepath_llm_test_" + std::to_string(::getpid()));
  fs::create_directories(dir / "llms");
  auto j = nlohmann::json::parse(std::ifstream(kModelsDir + "/llms/llama-3.1-8b.json"));
  j["rope"] = "half";
  const std::string file = (dir / "llms" / "bad.json").string();
  std::ofstream(file) << j.dump();
  const std::string m1 = error_of([&] { tilepath::perf::load_llm_model_file(file); });
  EXPECT_NE(m1.find(file), std::string::npos) << m1;
  EXPECT_NE(m1.find("'rope'"), std::string::npos) << m1;
  EXPECT_NE(m1.find("full|partial"), std::string::npos) << m1;

  j["rope"] = "full";
  j["kv_heads"] = 5;
  std::ofstream(file) << j.dump();
  const std::string m2 = error_of([&] { tilepath::perf::load_llm_model_file(file); });
  EXPECT_NE(m2.find("kv_heads"), std::string::npos) << m2;

  j["kv_heads"] = 8;
  j["parameters"] = {{"value", -1}, {"source", "x"}};
  std::ofstream(file) << j.dump();
  const std::string m4 = error_of([&] { tilepath::perf::load_llm_model_file(file); });
  EXPECT_NE(m4.find("parameters"), std::string::npos) << m4;

  const std::string m3 = error_of([&] { load_llm_model("gpt-9", kModelsDir); });
  EXPECT_NE(m3.find("qwen2.5-7b"), std::string::npos) << m3;
  fs::remove_all(dir);
}
