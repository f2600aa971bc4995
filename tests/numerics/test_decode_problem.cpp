// make_problem: paged layout, shuffled pages, ragged lengths, scales and pre-bias.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "core/numerics/decode_problem.h"
#include "core/numerics/fp8.h"
#include "core/numerics/key_model.h"
#include "core/numerics/mxfp8.h"
#include "core/numerics/problem_originals.h"
#include "core/numerics/rope.h"

using namespace tilepath;
using namespace tilepath::numerics;

namespace {

OperatingPoint small_op() {
  OperatingPoint op;
  op.batch = 3;
  op.context = 300;
  op.q_heads = 8;
  op.kv_heads = 2;
  op.head_dim = 64;
  op.page_size = 16;
  op.kv = KvDtype::k8v8;
  op.k_path = KPath::transform;
  op.mode = TransformMode::full;
  return op;
}

// Dequantized key of (request, token, head, dim) read through the page table.
double stored_key(const DecodeProblem& p, int b, int t, int h, int d) {
  const auto& op = p.op;
  const int page = p.page_table[static_cast<std::size_t>(b) * p.max_pages_per_seq + t / op.page_size];
  const std::size_t i =
      ((static_cast<std::size_t>(page) * op.page_size + t % op.page_size) * op.kv_heads + h) * op.head_dim + d;
  if (p.k8.empty()) return bf16_to_float(p.k16[i]);
  const double bias = p.k_bias.empty() ? 0.0 : p.k_bias[static_cast<std::size_t>(h) * op.head_dim + d];
  return bias + e4m3_to_float(p.k8[i]) * p.k_scale[p.k_scale.size() > 1 ? h : 0];
}

}  // namespace

TEST(DecodeProblem, PagesAreAShuffledPermutationCoveringRaggedLengths) {
  OperatingPoint op = small_op();
  op.context_lengths = {1, 15, 17, 300, 64};
  op.batch = 5;
  const auto p = make_problem(op, 3);
  EXPECT_EQ(p.lengths, (std::vector<std::int32_t>{1, 15, 17, 300, 64}));
  EXPECT_EQ(p.max_pages_per_seq, (300 + 15) / 16);
  EXPECT_EQ(p.num_pages, 1 + 1 + 2 + 19 + 4);
  std::vector<int> used;
  for (int b = 0; b < op.batch; ++b) {
    const int pages = (p.lengths[b] + op.page_size - 1) / op.page_size;
    for (int i = 0; i < pages; ++i) used.push_back(p.page_table[static_cast<std::size_t>(b) * p.max_pages_per_seq + i]);
  }
  std::vector<int> sorted = used;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> expected(p.num_pages);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(sorted, expected) << "every page used exactly once";
  EXPECT_NE(used, expected) << "pages must not be laid out contiguously";
  EXPECT_EQ(p.k8.size(), static_cast<std::size_t>(p.num_pages) * p.k_page_elems());
  EXPECT_EQ(p.k_page_elems(), static_cast<std::size_t>(16 * 2 * 64));
  EXPECT_TRUE(p.k16.empty());
  EXPECT_EQ(p.q.size(), static_cast<std::size_t>(5 * 8 * 64));
  EXPECT_FLOAT_EQ(p.softmax_scale, 1.0f / 8.0f);
}

TEST(DecodeProblem, StorageFollowsTheDtypeControl) {
  for (KvDtype kv : {KvDtype::k16v16, KvDtype::k8v16, KvDtype::k16v8, KvDtype::k8v8}) {
    OperatingPoint op = small_op();
    op.kv = kv;
    op.k_path = default_k_path(kv);
    op.mode = default_mode(kv, op.k_path);
    const auto p = make_problem(op, 1);
    EXPECT_EQ(p.k8.empty(), !k_is_fp8(kv));
    EXPECT_EQ(p.k16.empty(), k_is_fp8(kv));
    EXPECT_EQ(p.v8.empty(), !v_is_fp8(kv));
    EXPECT_EQ(p.v16.empty(), v_is_fp8(kv));
    if (!k_is_fp8(kv)) {
      EXPECT_EQ(p.k_scale, std::vector<float>(2, 1.0f));
    }
  }
}

TEST(DecodeProblem, SameSeedSameProblemOtherSeedOtherProblem) {
  const auto a = make_problem(small_op(), 5), b = make_problem(small_op(), 5), c = make_problem(small_op(), 6);
  EXPECT_EQ(a.k8, b.k8);
  EXPECT_EQ(a.v8, b.v8);
  EXPECT_EQ(a.q, b.q);
  EXPECT_EQ(a.page_table, b.page_table);
  EXPECT_NE(a.k8, c.k8);
  EXPECT_NE(a.q, c.q);
}

TEST(DecodeProblem, PerHeadScalesMakeEveryHeadReach448) {
  OperatingPoint op = small_op();
  for (ScaleGranularity scale : {ScaleGranularity::per_head, ScaleGranularity::per_tensor}) {
    op.scale = scale;
    const auto p = make_problem(op, 2, KeyDistribution::qwen_bias);  // heads differ through their bias
    ASSERT_EQ(p.k_scale.size(), scale == ScaleGranularity::per_head ? 2u : 1u);
    ASSERT_EQ(p.v_scale.size(), p.k_scale.size());
    std::vector<int> max_code(op.kv_heads, 0);
    for (std::size_t i = 0; i < p.k8.size(); ++i) {
      const int h = static_cast<int>(i / op.head_dim) % op.kv_heads;
      max_code[h] = std::max(max_code[h], p.k8[i] & 0x7F);
    }
    if (scale == ScaleGranularity::per_head) {
      for (int h = 0; h < op.kv_heads; ++h) EXPECT_EQ(max_code[h], 0x7E) << "head " << h << " uses the full range";
      EXPECT_NE(p.k_scale[0], p.k_scale[1]);
    } else {
      EXPECT_EQ(*std::max_element(max_code.begin(), max_code.end()), 0x7E);
    }
  }
}

TEST(DecodeProblem, StoredKeysApproximateTheOriginals) {
  OperatingPoint op = small_op();
  op.kv = KvDtype::k8v16;
  const detail::ProblemOriginals originals(op, 9, KeyDistribution::gaussian);
  const auto p = make_problem(op, 9);
  std::vector<float> keys;
  originals.keys(1, keys);
  double worst = 0;
  for (int t = 0; t < p.lengths[1]; ++t) {
    for (int h = 0; h < op.kv_heads; ++h) {
      for (int d = 0; d < op.head_dim; ++d) {
        const double original = keys[(static_cast<std::size_t>(t) * op.kv_heads + h) * op.head_dim + d];
        const double error = std::fabs(stored_key(p, 1, t, h, d) - original);
        // E4M3 keeps 3 mantissa bits: error <= half an ulp (1/16 relative) or half a subnormal step.
        const double bound = std::max(std::fabs(original) / 16.0, 0.5 * std::ldexp(1.0, -9) * p.k_scale[h]) * 1.0001;
        worst = std::max(worst, error / bound);
      }
    }
  }
  EXPECT_LE(worst, 1.0);
  EXPECT_GT(worst, 0.5);  // and it really is quantized
}

// Prebias keeps the model's own key bias b exact (a server knows it from the weights,
// never from the cache) and quantizes only the residual; post-RoPE the cache holds the
// rotated key less RoPE_t(b), so the residual is as small as pre-RoPE.
TEST(DecodeProblem, PrebiasStoresTheModelBiasExactly) {
  OperatingPoint op = small_op();
  op.k_repr = KRepr::prebias;
  for (RopeLayout rope : {RopeLayout::pre_rope, RopeLayout::post_rope}) {
    op.rope = rope;
    const std::string layout(to_string(rope));
    const auto p = make_problem(op, 4, KeyDistribution::qwen_bias);
    const detail::ProblemOriginals originals(op, 4, KeyDistribution::qwen_bias);
    ASSERT_EQ(p.k_bias.size(), static_cast<std::size_t>(op.kv_heads * op.head_dim)) << layout;
    EXPECT_EQ(p.k_bias, originals.key_bias()) << layout;
    // The bias of models/keys/qwen_bias.json (the built-in copy): its channel count and range.
    const KeyModel& model = builtin_key_model(KeyDistribution::qwen_bias);
    int large_channels = 0;
    for (float b : p.k_bias) {
      if (b == 0.0f) continue;
      ++large_channels;
      EXPECT_GE(std::fabs(b), std::floor(model.bias_min_std)) << layout;  // BF16-rounded
      EXPECT_LE(std::fabs(b), std::ceil(model.bias_max_std)) << layout;
    }
    EXPECT_EQ(large_channels, model.bias_channels_per_head * op.kv_heads) << layout;
    // The residual scale is set by the unit-variance residual, not by the bias.
    for (float s : p.k_scale) EXPECT_LT(s * kE4M3Max, 8.0f) << layout;

    // Each stored key is the original within E4M3 rounding of the residual.
    std::vector<float> keys;
    originals.keys(1, keys);
    double worst = 0;
    for (int t = 0; t < p.lengths[1]; ++t) {
      for (int h = 0; h < op.kv_heads; ++h) {
        std::vector<double> bias(p.k_bias.begin() + h * op.head_dim, p.k_bias.begin() + (h + 1) * op.head_dim);
        if (rope == RopeLayout::post_rope) apply_rope(bias.data(), op.head_dim, t);
        for (int d = 0; d < op.head_dim; ++d) {
          const std::size_t i = (static_cast<std::size_t>(t) * op.kv_heads + h) * op.head_dim + d;
          const int page = p.page_table[static_cast<std::size_t>(1) * p.max_pages_per_seq + t / op.page_size];
          const std::size_t slot =
              ((static_cast<std::size_t>(page) * op.page_size + t % op.page_size) * op.kv_heads + h) * op.head_dim + d;
          const double scale = p.k_scale[p.k_scale.size() > 1 ? h : 0];
          const double stored = bias[d] + e4m3_to_float(p.k8[slot]) * scale;
          const double residual = keys[i] - bias[d];
          const double bound = std::max(std::fabs(residual) / 16.0, 0.5 * std::ldexp(1.0, -9) * scale) * 1.01 + 1e-5;
          worst = std::max(worst, std::fabs(stored - keys[i]) / bound);
        }
      }
    }
    EXPECT_LE(worst, 1.0) << layout;
  }

  op.rope = RopeLayout::pre_rope;
  const auto gaussian = make_problem(op, 4, KeyDistribution::gaussian);
  for (float b : gaussian.k_bias) EXPECT_EQ(b, 0.0f) << "Gaussian keys have no bias";
  op.k_repr = KRepr::plain;
  const auto plain = make_problem(op, 4, KeyDistribution::qwen_bias);
  EXPECT_TRUE(plain.k_bias.empty());
  for (float s : plain.k_scale) EXPECT_GT(s * kE4M3Max, 20.0f) << "without prebias the bias captures the scale";
}

// MXFP8: every token's head row of K (and of an FP8 V) is exactly mxfp8_quantize of its
// BF16 original, elements in k8's paged layout and one E8M0 scale per 32 of them in
// k_mx_scales, same slot order; the per-head scales stay 1.0 and padding slots zero.
TEST(DecodeProblem, Mxfp8StoresTheBlockQuantizationOfEveryOriginalRow) {
  int rows_checked = 0;
  for (KvDtype kv : {KvDtype::k8v8, KvDtype::k8v16}) {
    for (RopeLayout rope : {RopeLayout::post_rope, RopeLayout::pre_rope}) {
      for (KeyDistribution dist : {KeyDistribution::gaussian, KeyDistribution::qwen_bias}) {
        OperatingPoint op = small_op();
        op.kv = kv;
        op.k_repr = KRepr::mxfp8;
        op.rope = rope;
        op.context_lengths = {1, 17, 300};  // a partly filled page in every request
        const std::string label =
            std::string(to_string(kv)) + " " + std::string(to_string(rope)) + " " + std::string(to_string(dist));
        const auto p = make_problem(op, 12, dist);
        const detail::ProblemOriginals originals(op, 12, dist);
        const int D = op.head_dim, Hk = op.kv_heads;
        const bool v8 = v_is_fp8(kv);
        ASSERT_EQ(p.k8.size(), static_cast<std::size_t>(p.num_pages) * p.k_page_elems()) << label;
        ASSERT_EQ(p.k_mx_scales.size(), p.k8.size() / kMxBlockSize) << label;
        ASSERT_EQ(p.v_mx_scales.size(), v8 ? p.v8.size() / kMxBlockSize : 0u) << label;
        EXPECT_EQ(p.v16.empty(), v8) << label;
        EXPECT_TRUE(p.k16.empty()) << label;
        EXPECT_TRUE(p.k_bias.empty()) << label;
        EXPECT_EQ(p.k_scale, std::vector<float>(Hk, 1.0f)) << label;
        EXPECT_EQ(p.v_scale, std::vector<float>(Hk, 1.0f)) << label;
        std::vector<bool> written(p.k8.size(), false);
        for (int b = 0; b < op.batch; ++b) {
          std::vector<float> keys, values;
          originals.keys(b, keys);
          originals.values(b, values);
          for (int t = 0; t < p.lengths[b]; ++t) {
            const int page = p.page_table[static_cast<std::size_t>(b) * p.max_pages_per_seq + t / op.page_size];
            for (int h = 0; h < Hk; ++h) {
              const std::size_t src = (static_cast<std::size_t>(t) * Hk + h) * D;
              const std::size_t slot =
                  ((static_cast<std::size_t>(page) * op.page_size + t % op.page_size) * Hk + h) * D;
              const Mxfp8Row k = mxfp8_quantize(&keys[src], D);
              ASSERT_TRUE(std::equal(k.elements.begin(), k.elements.end(), p.k8.begin() + slot))
                  << label << " K elements b " << b << " t " << t << " h " << h;
              ASSERT_TRUE(std::equal(k.scales.begin(), k.scales.end(), p.k_mx_scales.begin() + slot / 32))
                  << label << " K scales b " << b << " t " << t << " h " << h;
              if (v8) {
                const Mxfp8Row v = mxfp8_quantize(&values[src], D);
                ASSERT_TRUE(std::equal(v.elements.begin(), v.elements.end(), p.v8.begin() + slot)) << label;
                ASSERT_TRUE(std::equal(v.scales.begin(), v.scales.end(), p.v_mx_scales.begin() + slot / 32)) << label;
              } else {
                for (int d = 0; d < D; ++d) ASSERT_EQ(bf16_to_float(p.v16[slot + d]), values[src + d]) << label;
              }
              std::fill_n(written.begin() + slot, D, true);
              ++rows_checked;
            }
          }
        }
        // Padding slots (never read) hold element 0 and scale code 0.
        for (std::size_t i = 0; i < p.k8.size(); ++i) {
          if (written[i]) continue;
          ASSERT_EQ(p.k8[i], 0) << label << " padding " << i;
          ASSERT_EQ(p.k_mx_scales[i / 32], 0) << label << " padding " << i;
        }
        // The scales do vary: Gaussian blocks sit near 2^-7, a biased channel lifts its block.
        std::set<std::uint8_t> codes(p.k_mx_scales.begin(), p.k_mx_scales.end());
        EXPECT_GT(codes.size(), 2u) << label;
      }
    }
  }
  EXPECT_EQ(rows_checked, 2 * 2 * 2 * (1 + 17 + 300) * 2);
}

TEST(DecodeProblem, Mxfp8IsRefusedWithABf16KAndNamesTheHeadDim) {
  OperatingPoint op = small_op();
  op.k_repr = KRepr::mxfp8;
  op.kv = KvDtype::k16v8;
  op.k_path = KPath::k16;
  op.mode = TransformMode::full;
  try {
    make_problem(op, 1);
    ADD_FAILURE() << "mxfp8 with a BF16 K must be refused";
  } catch (const ValidationError& e) {
    EXPECT_EQ(e.field(), "k_repr") << e.what();
  }
  // One scale per 32 elements: a head dim that is no multiple of 32 is refused, naming it.
  op = small_op();
  op.k_repr = KRepr::mxfp8;
  op.head_dim = 48;
  try {
    make_problem(op, 1);
    ADD_FAILURE() << "head_dim 48 must be refused";
  } catch (const ValidationError& e) {
    EXPECT_EQ(e.field(), "head_dim") << e.what();
  }
}

TEST(DecodeProblem, DistributionsHaveTheirShape) {
  OperatingPoint op = small_op();
  op.batch = 1;
  op.context = 4096;
  auto excess_kurtosis = [&](KeyDistribution dist) {
    const detail::ProblemOriginals originals(op, 1, dist);
    std::vector<float> keys;
    originals.keys(0, keys);
    double m2 = 0, m4 = 0, mean = 0;
    for (float k : keys) mean += k;
    mean /= keys.size();
    for (float k : keys) {
      m2 += (k - mean) * (k - mean);
      m4 += std::pow(k - mean, 4);
    }
    m2 /= keys.size();
    m4 /= keys.size();
    EXPECT_NEAR(m2, 1.0, 0.15) << to_string(dist);
    return m4 / (m2 * m2) - 3.0;
  };
  EXPECT_NEAR(excess_kurtosis(KeyDistribution::gaussian), 0.0, 0.1);
  EXPECT_GT(excess_kurtosis(KeyDistribution::heavy_tailed), 2.0);
  EXPECT_EQ(parse_key_distribution("qwen_bias"), KeyDistribution::qwen_bias);
  EXPECT_THROW(parse_key_distribution("uniform"), ValidationError);
}

TEST(DecodeProblem, TabulatedNormalIsMonotoneAndMatchesQuantiles) {
  float previous = -INFINITY;
  for (std::uint64_t u = 0; u <= 0xFFFFFFFFull; u += 65521) {
    const float x = detail::standard_normal_from_bits(static_cast<std::uint32_t>(u));
    EXPECT_GE(x, previous);
    previous = x;
  }
  EXPECT_NEAR(detail::standard_normal_from_bits(0x80000000u), 0.0, 1e-4);
  // Phi(1.959964) = 0.975
  EXPECT_NEAR(detail::standard_normal_from_bits(static_cast<std::uint32_t>(0.975 * 4294967296.0)), 1.959964, 1e-4);
  EXPECT_NEAR(detail::standard_normal_from_bits(static_cast<std::uint32_t>(0.025 * 4294967296.0)), -1.959964, 1e-4);
  // Deep tail, inverted exactly: Phi(-5) = 2.8665e-7
  EXPECT_NEAR(detail::standard_normal_from_bits(static_cast<std::uint32_t>(2.8665e-7 * 4294967296.0)), -5.0, 2e-3);
}

TEST(DecodeProblem, PostRopeKeysAreRotatedPreRopeKeys) {
  OperatingPoint op = small_op();
  op.kv = KvDtype::k16v16;
  op.k_path = KPath::k16;
  op.mode = TransformMode::none;
  op.rope = RopeLayout::pre_rope;
  const detail::ProblemOriginals pre(op, 6, KeyDistribution::qwen_bias);
  op.rope = RopeLayout::post_rope;
  const detail::ProblemOriginals post(op, 6, KeyDistribution::qwen_bias);
  std::vector<float> k_pre, k_post;
  pre.keys(0, k_pre);
  post.keys(0, k_post);
  const int row = op.kv_heads * op.head_dim;
  for (int i = 0; i < row; ++i) EXPECT_EQ(k_pre[i], k_post[i]) << "position 0 is not rotated";
  for (int t : {1, 77, 299}) {
    for (int h = 0; h < op.kv_heads; ++h) {
      std::vector<double> expected(k_pre.begin() + t * row + h * op.head_dim,
                                   k_pre.begin() + t * row + (h + 1) * op.head_dim);
      apply_rope(expected.data(), op.head_dim, t);
      double norm_pre = 0, norm_post = 0;
      for (int d = 0; d < op.head_dim; ++d) {
        const float got = k_post[t * row + h * op.head_dim + d];
        EXPECT_NEAR(got, expected[d], 0.01 * std::max(1.0, std::fabs(expected[d]))) << "t " << t << " d " << d;
        norm_pre += expected[d] * expected[d];
        norm_post += static_cast<double>(got) * got;
      }
      EXPECT_NEAR(std::sqrt(norm_post), std::sqrt(norm_pre), 0.01 * std::sqrt(norm_pre)) << "a rotation keeps the norm";
    }
  }
}

TEST(DecodeProblem, InvalidOpIsRejected) {
  OperatingPoint op = small_op();
  op.head_dim = 80;
  EXPECT_THROW(make_problem(op, 1), ValidationError);
}
