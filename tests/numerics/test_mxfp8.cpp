// MXFP8 E4M3 (OCP MX v1.0) against the format's definition: the E8M0 table, exact round
// trips, the shared-exponent formula recomputed with frexp, the saturation rule, the
// E4M3 error bound, and what per-block scaling buys over one scale per row.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/numerics/fp8.h"
#include "core/numerics/mxfp8.h"

using namespace tilepath::numerics;

namespace {

// Value of an E4M3 code straight from the OCP e4m3fn definition, in double.
double e4m3_definition(int code) {
  const int sign = (code >> 7) & 1, exponent = (code >> 3) & 15, mantissa = code & 7;
  const double magnitude =
      exponent == 0 ? mantissa / 8.0 * std::pow(2.0, -6) : (1.0 + mantissa / 8.0) * std::pow(2.0, exponent - 7);
  return sign ? -magnitude : magnitude;
}

bool is_e4m3_nan(int code) { return (code & 0x7F) == 0x7F; }

// The shared exponent the spec's formula gives, computed independently of mxfp8.cpp:
// frexp writes amax = f * 2^e with f in [0.5, 1), so floor(log2(amax)) = e - 1.
int expected_shared_exponent(const float* block) {
  double amax = 0;
  for (int i = 0; i < 32; ++i) {
    if (std::isfinite(block[i])) amax = std::max(amax, std::fabs(static_cast<double>(block[i])));
  }
  if (amax == 0) return -127;
  int e = 0;
  std::frexp(amax, &e);
  return std::clamp(e - 1 - 8, -127, 127);
}

std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }

std::vector<float> dequantized(const Mxfp8Row& row) {
  std::vector<float> out(row.elements.size());
  mxfp8_dequantize(row, out.data());
  return out;
}

// Gaussian values times 2^scale_exponent (exact: a power-of-two factor).
std::vector<float> gaussian_row(int n, int scale_exponent, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(n));
  for (auto& v : x) v = std::ldexp(normal(rng), scale_exponent);
  return x;
}

}  // namespace

TEST(E8M0, EveryCodeIsTwoToTheCodeMinus127AndFFIsNaN) {
  for (int code = 0; code < 255; ++code) {
    const float value = e8m0_to_float(static_cast<std::uint8_t>(code));
    EXPECT_EQ(static_cast<double>(value), std::pow(2.0, code - 127)) << "code " << code;
  }
  EXPECT_TRUE(std::isnan(e8m0_to_float(0xFF)));
  EXPECT_TRUE(std::isnan(e8m0_to_float(kE8M0NaN)));
}

TEST(E8M0, FromExponentCoversMinus127To127AndRefusesTheRest) {
  for (int exponent = -127; exponent <= 127; ++exponent) {
    const std::uint8_t code = e8m0_from_exponent(exponent);
    EXPECT_EQ(code, exponent + 127);
    EXPECT_EQ(static_cast<double>(e8m0_to_float(code)), std::pow(2.0, exponent));
  }
  EXPECT_THROW(e8m0_from_exponent(-128), std::invalid_argument);
  EXPECT_THROW(e8m0_from_exponent(128), std::invalid_argument);
}

TEST(Mxfp8, ElementValueIsE4M3TimesScaleForEveryCodePair) {
  for (int scale = 0; scale < 256; ++scale) {
    for (int code = 0; code < 256; ++code) {
      const float got = mxfp8_value(static_cast<std::uint8_t>(code), static_cast<std::uint8_t>(scale));
      if (scale == 0xFF || is_e4m3_nan(code)) {
        EXPECT_TRUE(std::isnan(got)) << "code " << code << " scale " << scale;
        continue;
      }
      const double expected = e4m3_definition(code) * std::pow(2.0, scale - 127);
      if (std::fabs(expected) > std::numeric_limits<float>::max()) {
        // Only hand-built scales above 2^119 reach this: float cannot hold the product.
        EXPECT_TRUE(std::isinf(got) && std::signbit(got) == std::signbit(expected)) << code << " " << scale;
      } else {
        ASSERT_EQ(static_cast<double>(static_cast<float>(expected)), expected) << "float holds it exactly";
        EXPECT_EQ(bits_of(got), bits_of(static_cast<float>(expected))) << "code " << code << " scale " << scale;
      }
    }
  }
}

TEST(Mxfp8, EveryE4M3ValueTimesEveryInRangeScaleRoundTripsExactly) {
  // All 254 non-NaN codes, spread over blocks that each start with +448: that anchor
  // makes amax = 448 * 2^k, so the shared exponent is k and every value maps back to its
  // own code. k runs over the scales whose inputs float can hold: 448 * 2^119 < 2^128,
  // and 2^-127 is the smallest E8M0 scale.
  std::vector<int> codes;
  for (int code = 0; code < 256; ++code) {
    if (!is_e4m3_nan(code) && code != 0x7E) codes.push_back(code);
  }
  const int blocks = static_cast<int>((codes.size() + 30) / 31);
  std::vector<int> layout;  // the E4M3 code of each slot
  for (int b = 0; b < blocks; ++b) {
    layout.push_back(0x7E);
    for (int i = 0; i < 31; ++i) {
      const std::size_t next = static_cast<std::size_t>(b) * 31 + static_cast<std::size_t>(i);
      layout.push_back(next < codes.size() ? codes[next] : 0);
    }
  }
  const int n = static_cast<int>(layout.size());
  ASSERT_EQ(n % 32, 0);
  for (int k = -127; k <= 119; ++k) {
    std::vector<float> x(layout.size());
    for (std::size_t i = 0; i < layout.size(); ++i) {
      const double value = e4m3_definition(layout[i]) * std::pow(2.0, k);
      x[i] = static_cast<float>(value);
      ASSERT_EQ(static_cast<double>(x[i]), value) << "the input itself is exact, k=" << k;
    }
    const Mxfp8Row row = mxfp8_quantize(x.data(), n);
    ASSERT_EQ(row.scales.size(), static_cast<std::size_t>(blocks));
    for (const auto scale : row.scales) ASSERT_EQ(scale, k + 127) << "k=" << k;
    const std::vector<float> back = dequantized(row);
    for (std::size_t i = 0; i < layout.size(); ++i) {
      ASSERT_EQ(row.elements[i], layout[i]) << "k=" << k << " slot " << i;
      ASSERT_EQ(bits_of(back[i]), bits_of(x[i])) << "k=" << k << " slot " << i << " value " << x[i];
    }
  }
}

TEST(Mxfp8, BlockMaximumOf448TimesAPowerOfTwoStaysExact) {
  for (const int k : {-127, -60, -9, 0, 1, 7, 64, 119}) {
    std::vector<float> x = gaussian_row(32, k, static_cast<std::uint32_t>(k + 1000));
    for (auto& v : x) v = std::clamp(v, std::ldexp(-400.0f, k), std::ldexp(400.0f, k));
    const float amax = std::ldexp(448.0f, k);
    x[13] = -amax;
    const Mxfp8Row row = mxfp8_quantize(x.data(), 32);
    EXPECT_EQ(row.scales[0], k + 127) << "floor(log2(448 * 2^k)) - 8 = k";
    EXPECT_EQ(row.elements[13], 0xFE) << "-448";
    EXPECT_EQ(dequantized(row)[13], -amax) << "k=" << k;
  }
}

TEST(Mxfp8, ScaledValuesAbove448SaturateTo448) {
  // floor(log2(amax)) - 8 lets the block maximum scale to anything in [256, 512), but
  // E4M3's top binade ends at 448. Documented rule: round to nearest even, and a result
  // beyond 448 saturates to 448 (the spec's "clamping normal numbers"). Expected value:
  // sign * min(448, the nearest even point of the infinite E4M3 grid) * 2^k.
  for (const int k : {-127, -20, 0, 5, 119}) {
    for (const float top : {449.0f, 463.0f, 464.0f, 470.0f, 480.0f, 500.0f, 511.9f}) {
      for (const float sign : {1.0f, -1.0f}) {
        std::vector<float> x(32, std::ldexp(1.0f, k));
        x[7] = sign * std::ldexp(top, k);
        const Mxfp8Row row = mxfp8_quantize(x.data(), 32);
        EXPECT_EQ(row.scales[0], k + 127) << "top=" << top << " lies in [256, 512): exponent k";
        EXPECT_EQ(row.elements[7], sign > 0 ? 0x7E : 0xFE) << "top=" << top << " k=" << k;
        EXPECT_EQ(dequantized(row)[7], sign * std::ldexp(448.0f, k)) << "top=" << top << " k=" << k;
        EXPECT_EQ(dequantized(row)[0], std::ldexp(1.0f, k)) << "the others keep their value";
      }
    }
  }
  // The formula's blind spot: a maximum of 1.875 (mantissa above 1.75) scales to 480 and
  // comes back as 1.75, although E4M3 itself holds 1.875 exactly.
  std::vector<float> x(32, 0.25f);
  x[0] = 1.875f;
  ASSERT_EQ(e4m3_to_float(float_to_e4m3(1.875f)), 1.875f);
  EXPECT_EQ(dequantized(mxfp8_quantize(x.data(), 32))[0], 1.75f);
}

TEST(Mxfp8, SharedExponentFollowsTheFormulaForRandomBlocks) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-150, 110);
  const int blocks = 2000;
  std::vector<float> x(static_cast<std::size_t>(blocks) * 32);
  for (int b = 0; b < blocks; ++b) {
    const int e = exponent(rng);  // includes blocks of float subnormals and clamped scales
    for (int i = 0; i < 32; ++i)
      x[static_cast<std::size_t>(b) * 32 + static_cast<std::size_t>(i)] = std::ldexp(normal(rng), e);
  }
  const Mxfp8Row row = mxfp8_quantize(x.data(), static_cast<int>(x.size()));
  int clamped = 0;
  for (int b = 0; b < blocks; ++b) {
    const float* block = x.data() + static_cast<std::size_t>(b) * 32;
    const int expected = expected_shared_exponent(block);
    if (expected == -127) ++clamped;
    ASSERT_EQ(row.scales[static_cast<std::size_t>(b)], expected + 127) << "block " << b;
    for (int i = 0; i < 32; ++i) {
      // x * 2^-X computed in double is exact, and float holds it here.
      const float scaled = static_cast<float>(static_cast<double>(block[i]) * std::pow(2.0, -expected));
      ASSERT_EQ(row.elements[static_cast<std::size_t>(b) * 32 + static_cast<std::size_t>(i)], float_to_e4m3(scaled))
          << "block " << b << " element " << i;
    }
  }
  EXPECT_GT(clamped, 0) << "some blocks are small enough to hit the E8M0 floor";
}

TEST(Mxfp8, GaussianRowsStayWithinTheE4M3ErrorBound) {
  // Per element, with s = |x| / 2^X its scaled magnitude:
  //   normal range  2^-6 <= s <= 448: |q - x| <= 2^-4 |x|   (half an ulp of 3 mantissa bits)
  //   subnormal     s < 2^-6:          |q - x| <= 2^-10 2^X  (half the 2^-9 subnormal step)
  //   above 448     (block maximum):   q = +-448 2^X, so |q - x| < 64 2^X < |x| / 4
  for (const int scale_exponent : {-100, -10, 0, 10, 100}) {
    const std::vector<float> x = gaussian_row(4096, scale_exponent, static_cast<std::uint32_t>(scale_exponent + 500));
    const Mxfp8Row row = mxfp8_quantize(x.data(), 4096);
    const std::vector<float> q = dequantized(row);
    int normal = 0, saturated = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const int shared = expected_shared_exponent(x.data() + i / 32 * 32);
      const double xi = x[i], qi = q[i];
      const double s = std::fabs(xi) * std::pow(2.0, -shared);
      const double error = std::fabs(qi - xi);
      if (s > 448) {
        ++saturated;
        EXPECT_EQ(qi, std::copysign(448.0 * std::pow(2.0, shared), xi)) << i;
        EXPECT_LT(error, std::fabs(xi) / 4) << i;
      } else if (s >= std::pow(2.0, -6)) {
        ++normal;
        EXPECT_LE(error, std::fabs(xi) * std::pow(2.0, -4)) << i << " x=" << xi << " q=" << qi;
      } else {
        EXPECT_LE(error, std::pow(2.0, -10 + shared)) << i;
      }
    }
    EXPECT_GT(normal, 4000);
    EXPECT_GT(saturated, 0) << "some block maxima have a mantissa above 1.75";
  }
}

TEST(Mxfp8, SubnormalElementsStayWithinHalfTheSubnormalStep) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> tiny(-0.015625f, 0.015625f);  // |s| < 2^-6
  for (const int k : {-127, -3, 0, 40}) {
    std::vector<float> x(32);
    for (auto& v : x) v = std::ldexp(tiny(rng), k);
    x[0] = std::ldexp(256.0f, k);  // amax = 2^(8 + k): shared exponent k
    const std::vector<float> q = dequantized(mxfp8_quantize(x.data(), 32));
    for (int i = 1; i < 32; ++i) {
      const double error =
          std::fabs(static_cast<double>(q[static_cast<std::size_t>(i)]) - x[static_cast<std::size_t>(i)]);
      EXPECT_LE(error, std::pow(2.0, -10 + k)) << "k=" << k << " i=" << i;
    }
  }
}

TEST(Mxfp8, AnOutlierFlushesTheSmallValuesOfItsOwnBlockOnly) {
  // Block 0: small values and one outlier; block 1: the same small values. The outlier
  // sets block 0's exponent so high that the small values fall below half of E4M3's
  // smallest subnormal and vanish; block 1 has its own scale and keeps them all.
  std::vector<float> x(64);
  for (int i = 0; i < 32; ++i) {
    const float small = (i % 2 ? -1.0f : 1.0f) * (1.0e-3f + 2.5e-5f * static_cast<float>(i));
    x[static_cast<std::size_t>(i)] = small;
    x[static_cast<std::size_t>(32 + i)] = small;
  }
  x[5] = 800.0f;  // floor(log2 800) - 8 = 1; 800 / 2 rounds to 384 (ties to even)
  const Mxfp8Row row = mxfp8_quantize(x.data(), 64);
  const std::vector<float> q = dequantized(row);
  const int outlier_exponent = expected_shared_exponent(x.data());
  const int small_exponent = expected_shared_exponent(x.data() + 32);
  EXPECT_EQ(row.scales[0], outlier_exponent + 127);
  EXPECT_EQ(row.scales[1], small_exponent + 127);
  EXPECT_LE(std::fabs(q[5] - 800.0f), 800.0f / 16) << "the outlier itself is kept";
  for (int i = 0; i < 32; ++i) {
    if (i == 5) continue;
    const double scaled =
        std::fabs(static_cast<double>(x[static_cast<std::size_t>(i)])) * std::pow(2.0, -outlier_exponent);
    ASSERT_LT(scaled, std::pow(2.0, -10)) << "below half the smallest subnormal: rounds to zero";
    EXPECT_EQ(q[static_cast<std::size_t>(i)], 0.0f) << "block 0 element " << i << " is lost";
    const double original = x[static_cast<std::size_t>(32 + i)];
    EXPECT_LE(std::fabs(q[static_cast<std::size_t>(32 + i)] - original), std::fabs(original) / 16)
        << "block 1 element " << i << " survives";
  }
}

TEST(Mxfp8, AllZeroBlockGetsTheSmallestScaleAndKeepsSignedZeros) {
  std::vector<float> x(64, 0.0f);
  for (int i = 0; i < 32; i += 2) x[static_cast<std::size_t>(i)] = -0.0f;
  for (int i = 32; i < 64; ++i) x[static_cast<std::size_t>(i)] = 1.0f;
  const Mxfp8Row row = mxfp8_quantize(x.data(), 64);
  EXPECT_EQ(row.scales[0], 0x00) << "log2(0) = -inf clamps to -127";
  EXPECT_EQ(row.scales[1], 127 - 8) << "amax 1: floor(log2 1) - 8";
  const std::vector<float> q = dequantized(row);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(bits_of(q[static_cast<std::size_t>(i)]), bits_of(x[static_cast<std::size_t>(i)])) << i;
    EXPECT_EQ(q[static_cast<std::size_t>(32 + i)], 1.0f);
  }
}

TEST(Mxfp8, NaNStaysNaNInfinitySaturatesAndNeitherSetsTheScale) {
  std::vector<float> x(32, 0.5f);
  x[0] = 3.0f;  // the finite maximum: floor(log2 3) - 8 = -7
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[4] = std::numeric_limits<float>::infinity();
  x[5] = -std::numeric_limits<float>::infinity();
  const Mxfp8Row row = mxfp8_quantize(x.data(), 32);
  EXPECT_EQ(row.scales[0], -7 + 127);
  EXPECT_EQ(row.elements[3] & 0x7F, 0x7F);
  EXPECT_EQ(row.elements[4], 0x7E);
  EXPECT_EQ(row.elements[5], 0xFE);
  const std::vector<float> q = dequantized(row);
  EXPECT_TRUE(std::isnan(q[3]));
  EXPECT_EQ(q[4], 448.0f * std::ldexp(1.0f, -7));
  EXPECT_EQ(q[5], -448.0f * std::ldexp(1.0f, -7));
  EXPECT_EQ(q[0], 3.0f);
  EXPECT_EQ(q[1], 0.5f);
}

TEST(Mxfp8, NaNScaleMakesTheWholeBlockNaN) {
  Mxfp8Row row;
  row.elements.assign(64, 0x38);  // 1.0
  row.scales = {kE8M0NaN, 127};
  const std::vector<float> q = dequantized(row);
  for (int i = 0; i < 32; ++i) EXPECT_TRUE(std::isnan(q[static_cast<std::size_t>(i)])) << i;
  for (int i = 32; i < 64; ++i) EXPECT_EQ(q[static_cast<std::size_t>(i)], 1.0f) << i;
}

TEST(Mxfp8, RefusesRowsThatAreNotWholeBlocks) {
  const std::vector<float> x(96, 1.0f);
  for (const int n : {31, 33, 95, 0, -32}) {
    try {
      mxfp8_quantize(x.data(), n);
      ADD_FAILURE() << "n=" << n << " accepted";
    } catch (const std::invalid_argument& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("multiple of 32"), std::string::npos) << message;
      EXPECT_NE(message.find(std::to_string(n)), std::string::npos) << message;
    }
  }
  EXPECT_EQ(mxfp8_quantize(x.data(), 96).scales.size(), 3u);

  Mxfp8Row mismatched;
  mismatched.elements.assign(64, 0);
  mismatched.scales.assign(1, 127);
  std::vector<float> out(64);
  EXPECT_THROW(mxfp8_dequantize(mismatched, out.data()), std::invalid_argument);
}
