// Sweep spec parsing and expansion (core/sweep.cpp), no backend involved.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/sweep.h"

namespace tilepath {
namespace {

using nlohmann::json;

// The error message of parsing j, or "" when it parsed.
std::string parse_error(const json& j) {
  try {
    parse_sweep_spec(j);
  } catch (const ValidationError& e) {
    return e.what();
  }
  return "";
}

std::string field_of_error(const json& j) {
  try {
    parse_sweep_spec(j);
  } catch (const ValidationError& e) {
    return e.field();
  }
  return "";
}

TEST(SweepSpec, AllPathsAndModesExpandToEveryValidVariant) {
  SweepSpec spec = parse_sweep_spec(json::parse(R"({"axes": {"kv": "all", "k_path": "all", "mode": "all"}})"));
  // Independently: sum over dtype controls of valid (path, mode) pairs.
  std::size_t expected = 0;
  for (KvDtype kv : {KvDtype::k16v16, KvDtype::k8v16, KvDtype::k16v8, KvDtype::k8v8})
    for (KPath p : valid_k_paths(kv)) expected += valid_modes(kv, p).size();
  ASSERT_EQ(spec.cases.size(), expected);
  std::set<std::string> variants;
  for (const OperatingPoint& op : spec.cases) {
    EXPECT_TRUE(op.problems().empty()) << op.key();
    variants.insert(op.variant_label());
  }
  EXPECT_EQ(variants.size(), expected);
  EXPECT_EQ(spec.skipped_invalid, 0);
}

TEST(SweepSpec, PointsCrossEachBaseVariationWithTheAxes) {
  SweepSpec spec = parse_sweep_spec(json::parse(R"({
    "base": {"q_heads": 32, "kv_heads": 8, "head_dim": 128},
    "points": [{"head_dim": 64}, {"q_heads": 8, "kv_heads": 1}, {"page_size": 64}],
    "axes": {"batch": [1, 32], "context": [4096, 32768]}})"));
  ASSERT_EQ(spec.cases.size(), 3u * 2u * 2u);
  std::map<std::string, int> per_shape;
  for (const OperatingPoint& op : spec.cases) {
    per_shape[std::to_string(op.q_heads) + "/" + std::to_string(op.kv_heads) + " d" + std::to_string(op.head_dim) +
              " p" + std::to_string(op.page_size)]++;
  }
  const std::map<std::string, int> expected = {{"32/8 d64 p16", 4}, {"8/1 d128 p16", 4}, {"32/8 d128 p64", 4}};
  EXPECT_EQ(per_shape, expected);
}

TEST(SweepSpec, PointsMustBeAListOfOperatingPointFields) {
  EXPECT_EQ(field_of_error(json::parse(R"({"points": {"head_dim": 64}})")), "points");
  EXPECT_EQ(field_of_error(json::parse(R"({"points": []})")), "points");
  EXPECT_EQ(field_of_error(json::parse(R"({"points": [{"head_dim": 64}, {"warp_count": 2}]})")),
            "points[1].warp_count");
  EXPECT_EQ(field_of_error(json::parse(R"({"points": [{"head_dim": "wide"}]})")), "points[0].head_dim");
  // Within each point the axes' k_path still sets the paths (no default k_path added).
  SweepSpec spec = parse_sweep_spec(
      json::parse(R"({"points": [{"kv": "k8v8"}, {"kv": "k16v16"}], "axes": {"k_path": "all", "mode": "all"}})"));
  std::set<std::string> variants;
  for (const OperatingPoint& op : spec.cases)
    variants.insert(std::string(to_string(op.kv)) + "/" + std::string(to_string(op.k_path)) + "/" +
                    std::string(to_string(op.mode)));
  EXPECT_TRUE(variants.count("k8v8/fp8_qk/k_only")) << spec.cases.size();
  EXPECT_TRUE(variants.count("k16v16/k16/none"));
}

TEST(SweepSpec, CartesianProductMultipliesAxes) {
  SweepSpec spec = parse_sweep_spec(json::parse(
      R"({"base": {"q_heads": 16, "kv_heads": 4}, "axes": {"kv": ["k8v8", "k16v8"], "batch": [1, 2, 3], "context": [100, 200]}})"));
  ASSERT_EQ(spec.cases.size(), 2u * 3u * 2u);
  std::set<std::string> keys;
  for (const OperatingPoint& op : spec.cases) {
    keys.insert(op.key());
    EXPECT_EQ(op.q_heads, 16);
    EXPECT_EQ(op.kv_heads, 4);
    // No k_path/mode given: each case takes its dtype control's defaults.
    EXPECT_EQ(op.k_path, default_k_path(op.kv));
    EXPECT_EQ(op.mode, default_mode(op.kv, op.k_path));
  }
  EXPECT_EQ(keys.size(), spec.cases.size());
  // kv varies slowest, context fastest.
  EXPECT_EQ(spec.cases[0].kv, KvDtype::k8v8);
  EXPECT_EQ(spec.cases[0].context, 100);
  EXPECT_EQ(spec.cases[1].context, 200);
  EXPECT_EQ(spec.cases[6].kv, KvDtype::k16v8);
}

// mma is an axis like the others: a list doubles every variant, each case keeps its other
// fields, and keys and variant labels tell the two families apart.
TEST(SweepSpec, MmaAxisGivesEveryVariantOnBothFamilies) {
  const SweepSpec spec = parse_sweep_spec(
      json::parse(R"({"axes": {"kv": ["k8v8", "k16v8"], "mma": ["mma_sync", "wgmma"], "batch": [1, 4]}})"));
  ASSERT_EQ(spec.cases.size(), 2u * 2u * 2u);
  std::map<Mma, int> per_family;
  std::set<std::string> keys, variants;
  for (const OperatingPoint& op : spec.cases) {
    ++per_family[op.mma];
    keys.insert(op.key());
    variants.insert(op.variant_label());
  }
  EXPECT_EQ(per_family[Mma::mma_sync], 4);
  EXPECT_EQ(per_family[Mma::wgmma], 4);
  EXPECT_EQ(keys.size(), spec.cases.size());
  EXPECT_EQ(variants, (std::set<std::string>{"k8v8/transform/full", "k8v8/transform/full/wgmma", "k16v8/k16/full",
                                             "k16v8/k16/full/wgmma"}));
  // A scalar is a one-value axis, and "all" is every family.
  EXPECT_EQ(parse_sweep_spec(json::parse(R"({"base": {"mma": "wgmma"}})")).cases.at(0).mma, Mma::wgmma);
  EXPECT_EQ(parse_sweep_spec(json::parse(R"({"axes": {"mma": "wgmma"}})")).cases.at(0).mma, Mma::wgmma);
  EXPECT_EQ(parse_sweep_spec(json::parse(R"({"axes": {"mma": "all"}})")).cases.size(), 2u);
  EXPECT_EQ(parse_error(json::parse(R"({"axes": {"mma": ["mma_sync", "hgmma"]}})")),
            "axes.mma[1]: unknown value 'hgmma'; allowed: mma_sync|wgmma");
  EXPECT_EQ(field_of_error(json::parse(R"({"base": {"mma": 1}})")), "base.mma");
}

TEST(SweepSpec, InvalidCombinationsAreSkippedAndCounted) {
  SweepSpec spec = parse_sweep_spec(json::parse(R"({"axes": {"kv": "all", "k_path": ["k16"]}})"));
  // k16 is valid only for the K16 dtype controls.
  ASSERT_EQ(spec.cases.size(), 2u);
  for (const OperatingPoint& op : spec.cases) EXPECT_FALSE(k_is_fp8(op.kv));
  EXPECT_EQ(spec.skipped_invalid, 2);
}

TEST(SweepSpec, SettingsAndNameAreRead) {
  SweepSpec spec = parse_sweep_spec(json::parse(R"({"name": "x", "backend": "cpu",
      "settings": {"device": 1, "warmup": 0, "repeats": 3, "stage_costs": false, "tile_interval": false,
                   "seed": 42, "keys": "qwen_bias", "gpu_model": "b200", "save_tensors_dir": "/tmp/t"}})"));
  EXPECT_EQ(spec.name, "x");
  EXPECT_EQ(spec.backend, "cpu");
  EXPECT_EQ(spec.settings.device, 1);
  EXPECT_EQ(spec.settings.warmup, 0);
  EXPECT_EQ(spec.settings.repeats, 3);
  EXPECT_FALSE(spec.settings.stage_costs);
  EXPECT_FALSE(spec.settings.tile_interval);
  EXPECT_EQ(spec.settings.seed, 42u);
  EXPECT_EQ(spec.settings.key_distribution, "qwen_bias");
  EXPECT_EQ(spec.settings.gpu_model, "b200");
  EXPECT_EQ(spec.settings.save_tensors_dir, "/tmp/t");
  ASSERT_EQ(spec.cases.size(), 1u);  // no axes: the base point alone
}

TEST(SweepSpec, ErrorsNameTheJsonPathAndAllowedValues) {
  std::string e = parse_error(json::parse(R"({"axes": {"batch": [1, 2, "x"]}})"));
  EXPECT_NE(e.find("axes.batch[2]"), std::string::npos) << e;
  EXPECT_NE(e.find("integer"), std::string::npos) << e;

  e = parse_error(json::parse(R"({"axes": {"kv": ["k8v8", "k4v4"]}})"));
  EXPECT_EQ(field_of_error(json::parse(R"({"axes": {"kv": ["k8v8", "k4v4"]}})")), "axes.kv[1]");
  EXPECT_NE(e.find("k16v16"), std::string::npos) << e;  // lists the allowed names

  e = parse_error(json::parse(R"({"axes": {"batch": []}})"));
  EXPECT_NE(e.find("axes.batch"), std::string::npos) << e;
  EXPECT_NE(e.find("empty"), std::string::npos) << e;

  e = parse_error(json::parse(R"({"axes": {"colour": [1]}})"));
  EXPECT_NE(e.find("axes.colour"), std::string::npos) << e;
  EXPECT_NE(e.find("context"), std::string::npos) << e;  // allowed axis names listed

  e = parse_error(json::parse(R"({"axes": {"batch": "all"}})"));
  EXPECT_NE(e.find("axes.batch"), std::string::npos) << e;

  EXPECT_EQ(field_of_error(json::parse(R"({"axis": {}})")), "axis");
  EXPECT_EQ(field_of_error(json::parse(R"({"settings": {"repeats": 0}})")), "settings.repeats");
  EXPECT_EQ(field_of_error(json::parse(R"({"settings": {"repeats": 100001}})")), "settings.repeats");
  EXPECT_EQ(field_of_error(json::parse(R"({"settings": {"warmup": 2147483647}})")), "settings.warmup");
  EXPECT_EQ(field_of_error(json::parse(R"({"settings": {"warmup": 4294967296}})")), "settings.warmup");
  EXPECT_EQ(field_of_error(json::parse(R"({"settings": {"repeats": "many"}})")), "settings.repeats");
  EXPECT_EQ(field_of_error(json::parse(R"({"settings": {"colour": 1}})")), "settings.colour");
  EXPECT_EQ(field_of_error(json::parse(R"({"settings": {"stage_costs": 1}})")), "settings.stage_costs");
  EXPECT_EQ(field_of_error(json::parse(R"({"settings": {"keys": "uniform"}})")), "settings.keys");
  e = parse_error(json::parse(R"({"settings": {"keys": "uniform"}})"));
  EXPECT_NE(e.find("heavy_tailed"), std::string::npos) << e;
  EXPECT_EQ(field_of_error(json::parse(R"({"base": {"head_dim": 96}})")), "base.head_dim");
  EXPECT_EQ(field_of_error(json::parse(R"({"base": {"page_size": 3}})")), "base.page_size");
  EXPECT_EQ(field_of_error(json::parse(R"({"base": {"batch": 1.5}})")), "base.batch");
  EXPECT_EQ(field_of_error(json::parse(R"({"base": 7})")), "base");
  EXPECT_EQ(field_of_error(json::parse(R"({"axes": {"batch": [1, 1]}})")), "axes.batch[1]");
  EXPECT_EQ(field_of_error(json::parse(R"([1, 2])")), "spec");
}

TEST(SweepSpec, AllCombinationsInvalidIsAnError) {
  std::string e =
      parse_error(json::parse(R"({"base": {"kv": "k16v16"}, "axes": {"k_path": ["transform", "fp8_qk"]}})"));
  EXPECT_NE(e.find("no valid operating point"), std::string::npos) << e;
}

TEST(SweepSpec, LoadNamesTheFileForUnreadableOrMalformedJson) {
  auto dir = std::filesystem::temp_directory_path() / "tilepath-sweep-spec-test";
  std::filesystem::create_directories(dir);
  std::string bad = (dir / "bad.json").string();
  std::ofstream(bad) << "{\"axes\": {\"batch\": [1, 2,]}}";
  try {
    load_sweep_spec(bad);
    FAIL() << "malformed JSON accepted";
  } catch (const ValidationError& e) {
    EXPECT_EQ(e.field(), bad);
    EXPECT_NE(std::string(e.what()).find("malformed JSON"), std::string::npos);
  }
  EXPECT_THROW(load_sweep_spec((dir / "absent.json").string()), ValidationError);
  std::filesystem::remove_all(dir);
}

TEST(SweepSpec, BundledSpecsParseWithTheDocumentedSizes) {
  const std::string dir = std::string(TILEPATH_SOURCE_DIR) + "/data/sweeps/";
  SweepSpec cpu = load_sweep_spec(dir + "cpu-demo.json");
  EXPECT_EQ(cpu.backend, "cpu");
  EXPECT_GE(cpu.cases.size(), 50u);
  SweepSpec sim = load_sweep_spec(dir + "sim-h200.json");
  EXPECT_EQ(sim.backend, "sim");
  EXPECT_EQ(sim.name, "sim-h200");
  // 12 valid variants x 2 cache states x 5 batches x 7 contexts
  EXPECT_EQ(sim.cases.size(), 12u * 2u * 5u * 7u);
  SweepSpec cuda = load_sweep_spec(dir + "h200-cuda.json");
  EXPECT_EQ(cuda.backend, "cuda");
  EXPECT_EQ(cuda.cases.size(), sim.cases.size());
  for (const OperatingPoint& op : sim.cases) {
    EXPECT_EQ(op.head_dim, 128);
    EXPECT_EQ(op.q_heads, 32);
    EXPECT_EQ(op.kv_heads, 8);
    EXPECT_EQ(op.page_size, 16);
  }
}

TEST(SweepSpec, NoValidCombinationNamesTheFirstProblemField) {
  const std::string e = parse_error(json::parse(R"({"base": {"kv": "k16v16", "k_path": "fp8_qk"}})"));
  EXPECT_NE(e.find("no valid operating point"), std::string::npos) << e;
  EXPECT_NE(e.find("k_path"), std::string::npos) << "the first invalid combination's field: " << e;
}

TEST(SweepSpec, DeepNestingIsAOneLineErrorNotACrash) {
  const auto file = std::filesystem::temp_directory_path() / ("tilepath_deep_spec_" + std::to_string(::getpid()));
  {
    std::ofstream out(file);
    out << "{\"base\": " << std::string(100000, '[') << std::string(100000, ']') << "}";
  }
  try {
    load_sweep_spec(file.string());
    FAIL() << "a spec 100000 levels deep parsed";
  } catch (const ValidationError& e) {
    EXPECT_EQ(e.field(), file.string());
    EXPECT_NE(std::string(e.what()).find("deeper than 64"), std::string::npos) << e.what();
  }
  std::filesystem::remove(file);
}

TEST(SweepSpec, TheCaseCountIsCappedBeforeExpanding) {
  json axes = {{"batch", json::array()}, {"context", json::array()}};
  for (int i = 1; i <= 30; ++i) axes["batch"].push_back(i);
  for (int i = 1; i <= 50; ++i) axes["context"].push_back(16 * i);
  const json spec = {{"axes", axes}};
  try {
    parse_sweep_spec(spec, 1000);
    FAIL() << "1500 combinations passed a limit of 1000";
  } catch (const ValidationError& e) {
    EXPECT_EQ(e.field(), "axes");
    EXPECT_NE(std::string(e.what()).find("1500 combinations"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--max-cases"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_sweep_spec(spec, 1500).cases.size(), 1500u);
  // "all" axes count every name of their field.
  EXPECT_THROW(parse_sweep_spec(json::parse(R"({"axes": {"kv": "all", "k_path": "all", "mode": "all"}})"), 10),
               ValidationError);
}

}  // namespace
}  // namespace tilepath
