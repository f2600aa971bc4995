// The numerical gate on the shipped key distributions: what the gate must show, with
// the metrics computed by the gate itself (no number is written in), and its parts.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/numerics/npy_writer.h"
#include "core/quality/gate.h"

namespace tilepath::quality {
namespace {

const std::string kModels = std::string(TILEPATH_SOURCE_DIR) + "/models";

// A small shape every test can afford in float64: 1 request, 2 kv heads of 4 q heads.
OperatingPoint small(KvDtype kv = KvDtype::k8v8, KRepr repr = KRepr::plain, RopeLayout rope = RopeLayout::post_rope,
                     KPath path = KPath::transform) {
  OperatingPoint op;
  op.batch = 1;
  op.context = 1024;
  op.q_heads = 8;
  op.kv_heads = 2;
  op.kv = kv;
  op.k_path = k_is_fp8(kv) ? path : KPath::k16;
  op.mode = default_mode(op.kv, op.k_path);
  op.k_repr = repr;
  op.rope = rope;
  return op;
}

GateResult gate(const std::string& distribution, const OperatingPoint& op) {
  GateSettings s;
  s.op = op;
  return evaluate_gate(load_key_model(distribution, kModels), s);
}

TEST(Gate, QwenLikeKeysFailPlainK8V8AndPassPrebias) {
  const GateResult plain = gate("qwen_bias", small());
  EXPECT_FALSE(plain.verdict.passed) << plain.to_json().dump();
  // The crushed residual shows in the attention weights, not only in the output.
  EXPECT_GT(plain.metrics.kl.worst, plain.settings.thresholds.kl);
  for (RopeLayout rope : {RopeLayout::post_rope, RopeLayout::pre_rope}) {
    const GateResult prebias = gate("qwen_bias", small(KvDtype::k8v8, KRepr::prebias, rope));
    EXPECT_TRUE(prebias.verdict.passed) << prebias.to_json().dump();
    EXPECT_LT(prebias.metrics.rel_l2.worst, plain.metrics.rel_l2.worst / 2) << to_string(rope);
  }
}

TEST(Gate, GaussianKeysPassPlainAndPrebias) {
  for (KRepr repr : {KRepr::plain, KRepr::prebias}) {
    const GateResult r = gate("gaussian", small(KvDtype::k8v8, repr));
    EXPECT_TRUE(r.verdict.passed) << r.to_json().dump();
  }
}

TEST(Gate, K16V8PassesOnEveryShippedDistribution) {
  for (const KeyModel& keys : load_key_models(kModels)) {
    GateSettings s;
    s.op = small(KvDtype::k16v8);
    const GateResult r = evaluate_gate(keys, s);
    EXPECT_TRUE(r.verdict.passed) << keys.id << ": " << r.to_json().dump();
    EXPECT_EQ(r.metrics.kl.worst, 0.0) << keys.id;  // K is exact: the weights are the reference's
  }
}

TEST(Gate, Fp8QkIsMeasuredAgainstTheBf16QueryAndLosesMoreThanTransform) {
  const GateResult transform = gate("gaussian", small());
  const GateResult fp8_qk = gate("gaussian", small(KvDtype::k8v8, KRepr::plain, RopeLayout::post_rope, KPath::fp8_qk));
  EXPECT_GE(fp8_qk.metrics.rel_l2.worst, 1e-2);
  EXPECT_GT(fp8_qk.metrics.rel_l2.worst, transform.metrics.rel_l2.worst);
  EXPECT_GT(fp8_qk.metrics.kl.worst, transform.metrics.kl.worst);  // quantizing Q moves the weights too
}

TEST(Gate, Mxfp8IsComparedWithPlainE4M3OnEveryDistribution) {
  for (const KeyModel& keys : load_key_models(kModels)) {
    GateSettings s;
    s.op = small();
    const GateResult plain = evaluate_gate(keys, s);
    s.op.k_repr = KRepr::mxfp8;
    const GateResult mx = evaluate_gate(keys, s);
    EXPECT_EQ(mx.representation, "k8v8/transform/full/mxfp8/post_rope/per_head");
    EXPECT_EQ(mx.metrics.rows.size(), plain.metrics.rows.size()) << keys.id;
    EXPECT_TRUE(std::isfinite(mx.metrics.rel_l2.worst)) << keys.id;
    // On Gaussian keys a per-32 block scale is as good as a per-head one (within 25%).
    if (keys.id == "gaussian") {
      EXPECT_LT(mx.metrics.rel_l2.worst, 1.25 * plain.metrics.rel_l2.worst);
    }
    // A large bias in a block takes that block's scale: MXFP8 fails where plain E4M3 does.
    if (keys.id == "qwen_bias") {
      EXPECT_FALSE(mx.verdict.passed);
    }
  }
}

TEST(Gate, K16V16DiffersOnlyByTheBf16Output) {
  const GateResult r = gate("qwen_bias", small(KvDtype::k16v16));
  EXPECT_EQ(r.metrics.kl.worst, 0.0);
  EXPECT_EQ(r.metrics.top8.worst, 1.0);
  EXPECT_GT(r.metrics.rel_l2.worst, 0.0);
  EXPECT_LT(r.metrics.rel_l2.worst, 4e-3);  // BF16 has 8 mantissa bits: 2^-9 relative per element
}

TEST(Gate, EveryRowIsCheckedAndTheResultNamesItsSettings) {
  OperatingPoint op = small();
  op.batch = 3;
  const GateResult r = gate("gaussian", op);
  EXPECT_EQ(r.metrics.rows_total, 6);
  EXPECT_EQ(r.metrics.rows.size(), 6u);
  const nlohmann::json j = r.to_json();
  EXPECT_EQ(j["distribution"], "gaussian");
  EXPECT_EQ(j["metrics"]["rows_checked"], 6);
  for (const char* m : {"rel_l2", "max_abs", "kl", "top8", "top32"}) {
    EXPECT_TRUE(j["metrics"][m].contains("worst")) << m;
    EXPECT_TRUE(j["metrics"][m].contains("median")) << m;
    EXPECT_TRUE(j["thresholds"].contains(m)) << m;
  }
  // Another seed draws other keys.
  GateSettings s;
  s.op = op;
  s.seed = 2;
  EXPECT_NE(evaluate_gate(load_key_model("gaussian", kModels), s).metrics.rel_l2.worst, r.metrics.rel_l2.worst);
}

TEST(Gate, AutoregressiveStepsGrowTheContextAndEveryStepMustPass) {
  GateSettings s;
  s.op = small();
  s.op.context = 256;
  s.steps = 4;
  const KeyModel keys = load_key_model("heavy_tailed", kModels);
  const GateResult fixed = evaluate_gate(keys, s);
  ASSERT_EQ(fixed.steps.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(fixed.steps[i].step, i + 1);
    EXPECT_EQ(fixed.steps[i].tokens, 256 + i + 1);
  }
  bool all_pass = true;
  for (const GateStep& st : fixed.steps) all_pass = all_pass && st.verdict.passed;
  EXPECT_EQ(fixed.verdict.passed, all_pass);
  s.scales_from_prefix = false;
  const GateResult updated = evaluate_gate(keys, s);
  EXPECT_EQ(updated.steps.size(), 4u);
  EXPECT_NE(updated.to_json()["scales"], fixed.to_json()["scales"]);
}

TEST(Gate, TighterThresholdsFailWhatTheDefaultsPass) {
  GateSettings s;
  s.op = small();
  const KeyModel keys = load_key_model("gaussian", kModels);
  ASSERT_TRUE(evaluate_gate(keys, s).verdict.passed);
  s.thresholds = numerics::GateThresholds::from_json(nlohmann::json{{"rel_l2", 1e-3}});
  const GateResult strict = evaluate_gate(keys, s);
  EXPECT_FALSE(strict.verdict.passed);
  ASSERT_FALSE(strict.verdict.failures.empty());
  EXPECT_EQ(strict.verdict.failures[0].rfind("rel_l2 ", 0), 0u) << strict.verdict.failures[0];
  EXPECT_THROW(numerics::GateThresholds::from_json(nlohmann::json{{"colour", 1}}), std::invalid_argument);
}

TEST(Gate, ImportedKeysAreGatedAgainstThemselvesAtFullPrecision) {
  // Keys with a large bias on four channels, as a [tokens, kv_heads, head_dim] float32 dump.
  const int T = 512, H = 2, D = 128;
  std::vector<float> keys(static_cast<std::size_t>(T) * H * D), bias(static_cast<std::size_t>(H) * D, 0.0f);
  std::uint64_t x = 88172645463325252ull;
  auto uniform = [&] {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return (x >> 11) * (1.0 / 9007199254740992.0);
  };
  for (int h = 0; h < H; ++h) {
    bias[static_cast<std::size_t>(h) * D + 5] = 40.0f;
    bias[static_cast<std::size_t>(h) * D + 17] = -35.0f;
    bias[static_cast<std::size_t>(h) * D + 60] = 45.0f;
    bias[static_cast<std::size_t>(h) * D + 100] = -30.0f;
  }
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h)
      for (int d = 0; d < D; ++d) {
        // Box-Muller residual plus the bias, rotated as a post-RoPE cache holds it.
        const double r = std::sqrt(-2 * std::log(uniform() + 1e-300)) * std::cos(6.283185307179586 * uniform());
        keys[(static_cast<std::size_t>(t) * H + h) * D + d] = static_cast<float>(r + bias[h * D + d]);
      }
  std::vector<double> row(D);
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h) {
      float* k = &keys[(static_cast<std::size_t>(t) * H + h) * D];
      std::copy(k, k + D, row.begin());
      rotate(row.data(), D, t);
      for (int d = 0; d < D; ++d) k[d] = static_cast<float>(row[d]);
    }
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tilepath-gate-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string kfile = (dir / "k.npy").string(), bfile = (dir / "b.npy").string();
  numerics::write_npy(kfile, "<f4", 4, {T, H, D}, keys.data(), keys.size() * 4);
  numerics::write_npy(bfile, "<f4", 4, {H, D}, bias.data(), bias.size() * 4);

  ImportedKv dump;
  dump.file = kfile;
  dump.keys = numerics::read_npy_kv(kfile, numerics::NpyElementType::float32);
  GateSettings s;
  s.op = small();
  const GateResult plain = evaluate_gate(dump, s);
  EXPECT_EQ(plain.distribution, "npy:" + kfile);
  EXPECT_EQ(plain.settings.op.context, T);
  EXPECT_EQ(plain.settings.op.kv_heads, H);
  EXPECT_EQ(plain.metrics.rows.size(), 2u);
  EXPECT_FALSE(plain.verdict.passed);  // the bias takes the scale
  dump.bias_file = bfile;
  dump.bias = numerics::read_npy_kv_bias(bfile, numerics::NpyElementType::float32);
  s.op.k_repr = KRepr::prebias;
  const GateResult prebias = evaluate_gate(dump, s);
  EXPECT_TRUE(prebias.verdict.passed) << prebias.to_json().dump();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tilepath::quality
