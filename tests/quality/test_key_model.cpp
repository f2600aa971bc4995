// One definition of the key distributions: the shipped models/keys files are what both the
// gate and the plugins' input generation use (core/numerics/key_model.h).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "backends/abi/tilepath_plugin_gate.h"
#include "core/numerics/decode_problem.h"
#include "core/numerics/key_model.h"
#include "core/quality/key_model.h"

namespace tilepath::quality {
namespace {

namespace fs = std::filesystem;
using numerics::KeyDistribution;

const std::string kModels = std::string(TILEPATH_SOURCE_DIR) + "/models";

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A models directory holding an edited copy of qwen_bias.json: every biased channel at
// `magnitude` residual stds.
struct EditedModels {
  fs::path dir;
  std::string text;
  explicit EditedModels(double magnitude) {
    dir = fs::temp_directory_path() / ("tilepath_key_model_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir / "keys");
    nlohmann::json j = nlohmann::json::parse(read_text(kModels + "/keys/qwen_bias.json"));
    j["bias_min_std"]["value"] = magnitude;
    j["bias_max_std"]["value"] = magnitude;
    text = j.dump(2);
    std::ofstream(dir / "keys" / "qwen_bias.json") << text;
  }
  ~EditedModels() { fs::remove_all(dir); }
};

OperatingPoint small_op() {
  OperatingPoint op;
  op.batch = 1;
  op.context = 64;
  op.q_heads = 4;
  op.kv_heads = 2;
  op.head_dim = 128;
  op.page_size = 16;
  op.kv = KvDtype::k8v8;
  op.k_path = KPath::transform;
  op.mode = default_mode(op.kv, op.k_path);
  op.k_repr = KRepr::prebias;
  return op;
}

TEST(KeyModel, BuiltinDefaultsAreTheShippedFiles) {
  for (KeyDistribution dist : {KeyDistribution::gaussian, KeyDistribution::heavy_tailed, KeyDistribution::qwen_bias}) {
    const std::string stem(numerics::to_string(dist));
    const KeyModel file = load_key_model(stem, kModels);
    const KeyModel& builtin = numerics::builtin_key_model(dist);
    EXPECT_TRUE(builtin.same_parameters(file)) << stem;
    EXPECT_EQ(builtin.name, file.name) << stem;
    EXPECT_EQ(builtin.source, file.source) << stem;
  }
  // Field by field for the distribution the gate's Qwen tests rest on.
  const KeyModel file = load_key_model("qwen_bias", kModels);
  const KeyModel& builtin = numerics::builtin_key_model(KeyDistribution::qwen_bias);
  EXPECT_EQ(builtin.bias_channels_per_head, file.bias_channels_per_head);
  EXPECT_EQ(builtin.bias_min_std, file.bias_min_std);
  EXPECT_EQ(builtin.bias_max_std, file.bias_max_std);
  EXPECT_EQ(numerics::builtin_key_model(KeyDistribution::heavy_tailed).student_dof,
            load_key_model("heavy_tailed", kModels).student_dof);
}

TEST(KeyModel, AnEditedCopyChangesTheGateKeys) {
  const EditedModels edited(7);
  OperatingPoint op = small_op();
  const KeyGenerator shipped(load_key_model("qwen_bias", kModels), op, 3);
  const KeyGenerator changed(load_key_model("qwen_bias", edited.dir.string()), op, 3);
  const GateRow a = shipped.row(0, 0, 16), b = changed.row(0, 0, 16);
  EXPECT_NE(a.k_pre, b.k_pre);
  int biased = 0;
  for (double x : b.bias) {
    if (x == 0) continue;
    ++biased;
    EXPECT_EQ(std::fabs(x), 7.0);
  }
  EXPECT_EQ(biased, changed.model().bias_channels_per_head);
  for (double x : a.bias) {
    if (x != 0) {
      EXPECT_GE(std::fabs(x), shipped.model().bias_min_std - 1);  // BF16 rounding of the shipped range
    }
  }
}

TEST(KeyModel, AnEditedCopyChangesTheProblemKeys) {
  const EditedModels edited(7);
  const KeyModel model = numerics::parse_key_model_text(edited.text, "qwen_bias", "edited");
  const auto shipped = numerics::make_problem(small_op(), 5, KeyDistribution::qwen_bias);
  const auto changed = numerics::make_problem(small_op(), 5, KeyDistribution::qwen_bias, &model);
  ASSERT_EQ(shipped.k_bias.size(), changed.k_bias.size());
  EXPECT_NE(shipped.k_bias, changed.k_bias);
  int biased = 0;
  for (float x : changed.k_bias) {
    if (x == 0) continue;
    ++biased;
    EXPECT_EQ(std::fabs(x), 7.0f);
  }
  EXPECT_EQ(biased, small_op().kv_heads * model.bias_channels_per_head);
  // A model of another kind for these keys is refused.
  const KeyModel gaussian = numerics::builtin_key_model(KeyDistribution::gaussian);
  EXPECT_THROW(numerics::make_problem(small_op(), 5, KeyDistribution::qwen_bias, &gaussian), std::invalid_argument);
}

// Plugins that generate keys only with their built-in parameters (cuda, hip) refuse a
// host's different parameters instead of generating other inputs than the host gates with.
TEST(KeyModel, BuiltinOnlyPluginsRefuseDifferentParameters) {
  const EditedModels edited(7);
  const std::string shipped = read_text(kModels + "/keys/qwen_bias.json");
  tp_run_options o{};
  o.struct_size = sizeof o;
  o.key_distribution = "qwen_bias";
  o.key_model_json = shipped.c_str();
  std::string why;
  EXPECT_EQ(plugin::key_distribution(&o, &why), KeyDistribution::qwen_bias) << why;
  o.key_model_json = edited.text.c_str();
  EXPECT_FALSE(plugin::key_distribution(&o, &why).has_value());
  EXPECT_NE(why.find("key_model_json"), std::string::npos) << why;
  // The plugins that honour the text get the edited parameters.
  const auto keys = plugin::requested_keys(&o, &why);
  ASSERT_TRUE(keys.has_value()) << why;
  EXPECT_EQ(keys->model.bias_min_std, 7);
  // An older host's shorter struct: the built-in file.
  o.struct_size = offsetof(tp_run_options, key_model_json);
  EXPECT_EQ(plugin::key_distribution(&o, &why), KeyDistribution::qwen_bias) << why;
}

}  // namespace
}  // namespace tilepath::quality
