// E4M3 and BF16 codecs against the format definition and a brute-force
// nearest-even search over every code.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "core/numerics/fp8.h"

using namespace tilepath::numerics;

namespace {

// Value of a code straight from the OCP e4m3fn definition (written independently of fp8.cpp).
double e4m3_definition(int code) {
  const int sign = (code >> 7) & 1, exponent = (code >> 3) & 15, mantissa = code & 7;
  double magnitude =
      exponent == 0 ? mantissa / 8.0 * std::pow(2.0, -6) : (1.0 + mantissa / 8.0) * std::pow(2.0, exponent - 7);
  return sign ? -magnitude : magnitude;
}

bool is_e4m3_nan(int code) { return (code & 0x7F) == 0x7F; }

// Brute force: nearest finite code by |value - x| in double, ties to the even code,
// |x| > 448 (infinity included) clamps to 448, NaN -> 0x7F.
std::uint8_t e4m3_brute_force(float x) {
  if (std::isnan(x)) return 0x7F;
  const int sign = std::signbit(x) ? 0x80 : 0;
  const double magnitude = std::fabs(static_cast<double>(x));
  if (magnitude > 448.0) return static_cast<std::uint8_t>(sign | 0x7E);
  int best = 0;
  double best_distance = std::numeric_limits<double>::infinity();
  for (int code = 0; code <= 0x7E; ++code) {
    const double distance = std::fabs(e4m3_definition(code) - magnitude);
    if (distance < best_distance || (distance == best_distance && (code & 1) == 0)) {
      best = code;
      best_distance = distance;
    }
  }
  return static_cast<std::uint8_t>(sign | best);
}

void expect_encodes_like_brute_force(float x) {
  const std::uint8_t expected = e4m3_brute_force(x);
  const std::uint8_t got = float_to_e4m3(x);
  ASSERT_EQ(got, expected) << "x=" << x << " bits=0x" << std::hex << std::bit_cast<std::uint32_t>(x);
}

}  // namespace

TEST(E4M3, AllCodesDecodeToDefinition) {
  for (int code = 0; code < 256; ++code) {
    const float value = e4m3_to_float(static_cast<std::uint8_t>(code));
    if (is_e4m3_nan(code)) {
      EXPECT_TRUE(std::isnan(value)) << code;
    } else {
      EXPECT_EQ(static_cast<double>(value), e4m3_definition(code)) << "code " << code;
    }
  }
  EXPECT_EQ(e4m3_to_float(0x7E), 448.0f);
  EXPECT_EQ(e4m3_to_float(0xFE), -448.0f);
  EXPECT_EQ(e4m3_to_float(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(e4m3_to_float(0x08), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_TRUE(std::signbit(e4m3_to_float(0x80)));
  EXPECT_EQ(e4m3_to_float(0x80), 0.0f);
}

TEST(E4M3, RoundTripsEveryNonNaNCode) {
  for (int code = 0; code < 256; ++code) {
    if (is_e4m3_nan(code)) continue;
    EXPECT_EQ(float_to_e4m3(e4m3_to_float(static_cast<std::uint8_t>(code))), code) << code;
  }
}

TEST(E4M3, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(float_to_e4m3(std::numeric_limits<float>::quiet_NaN()), 0x7F);
  EXPECT_EQ(float_to_e4m3(-std::numeric_limits<float>::quiet_NaN()), 0x7F);
  EXPECT_EQ(float_to_e4m3(inf), 0x7E);
  EXPECT_EQ(float_to_e4m3(-inf), 0xFE);
  EXPECT_EQ(float_to_e4m3(1e30f), 0x7E);
  EXPECT_EQ(float_to_e4m3(464.0f), 0x7E);  // would round to 480 without satfinite
  EXPECT_EQ(float_to_e4m3(-500.0f), 0xFE);
  EXPECT_EQ(float_to_e4m3(0.0f), 0x00);
  EXPECT_EQ(float_to_e4m3(-0.0f), 0x80);
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -10)), 0x00);   // half the smallest subnormal: tie to even (0)
  EXPECT_EQ(float_to_e4m3(std::ldexp(3.0f, -10)), 0x02);   // 1.5 subnormal steps: tie to even (2)
  EXPECT_EQ(float_to_e4m3(-std::ldexp(1.0f, -11)), 0x80);  // underflow keeps the sign
  EXPECT_EQ(float_to_e4m3(1.0625f), 0x38);                 // 1 + 1/16 ties down to 1.0 (even)
  EXPECT_EQ(float_to_e4m3(1.1875f), 0x3A);                 // 1 + 3/16 ties up to 1.25 (even)
  EXPECT_EQ(float_to_e4m3(15.5f), 0x58);                   // 15 (0x57) and 16 (0x58) tie; 16 is even
}

TEST(E4M3, EveryMidpointAndNeighbourMatchesBruteForce) {
  std::vector<float> values;
  for (int code = 0; code < 0x7E; ++code) {
    const float low = e4m3_to_float(static_cast<std::uint8_t>(code));
    const float high = e4m3_to_float(static_cast<std::uint8_t>(code + 1));
    const float midpoint = (low + high) / 2;  // exact: one extra mantissa bit
    ASSERT_EQ(static_cast<double>(midpoint), (e4m3_definition(code) + e4m3_definition(code + 1)) / 2);
    for (float v : {low, midpoint, std::nextafter(midpoint, 0.0f), std::nextafter(midpoint, 1e9f),
                    std::nextafter(low, 0.0f), std::nextafter(low, 1e9f)}) {
      values.push_back(v);
      values.push_back(-v);
    }
  }
  for (float v : {448.0f, std::nextafter(448.0f, 1e9f), 456.0f, 463.99f, 464.0f, 480.0f}) {
    values.push_back(v);
    values.push_back(-v);
  }
  for (float v : values) expect_encodes_like_brute_force(v);
}

TEST(E4M3, MillionsOfFloatsMatchBruteForce) {
  // A stride through every float bit pattern (covers subnormal floats, huge values, inf, NaN) ...
  for (std::uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 4093) {
    expect_encodes_like_brute_force(std::bit_cast<float>(static_cast<std::uint32_t>(bits)));
  }
  // ... and dense random samples inside the E4M3 range, where the rounding decisions are.
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<float> linear(-470.0f, 470.0f);
  std::uniform_real_distribution<float> log2_magnitude(-12.0f, 9.0f);
  for (int i = 0; i < 1'000'000; ++i) {
    expect_encodes_like_brute_force(linear(rng));
    const float x = std::exp2(log2_magnitude(rng));
    expect_encodes_like_brute_force((i & 1) ? x : -x);
  }
}

namespace {
std::uint16_t bf16_brute_force(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  const std::uint16_t truncated = static_cast<std::uint16_t>(bits >> 16);
  const std::uint16_t next = static_cast<std::uint16_t>(truncated + 1);
  const double down = static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(truncated) << 16));
  const double up = static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(next) << 16));
  const double xd = x;
  const double distance_down = std::fabs(xd - down);
  // Callers skip x whose upper neighbour is infinity (checked separately).
  const double distance_up = std::fabs(up - xd);
  if (distance_down < distance_up) return truncated;
  if (distance_up < distance_down) return next;
  return (truncated & 1) ? next : truncated;
}
}  // namespace

TEST(BF16, RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3F808000u)), 0x3F80);  // tie, even stays
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3F818000u)), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3F808001u)), 0x3F81);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(float_to_bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7F80);  // rounds past the max to inf
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::bit_cast<float>(0x7F800001u)))));  // signalling NaN stays NaN
  EXPECT_EQ(bf16_to_float(0x4049), 3.140625f);
  EXPECT_EQ(round_bf16(3.14159265f), 3.140625f);

  std::mt19937_64 rng(99);
  for (int i = 0; i < 2'000'000; ++i) {
    const float x = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    if (std::isnan(x) || std::isinf(x)) continue;
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
    if ((bits & 0x7F800000u) == 0x7F000000u && (bits >> 16 & 0x7F) == 0x7F) continue;  // next is inf: checked above
    ASSERT_EQ(float_to_bf16(x), bf16_brute_force(x)) << std::hex << bits;
  }
}

TEST(BF16, EveryBf16ValueRoundTrips) {
  for (std::uint32_t code = 0; code < 0x10000; ++code) {
    const float value = bf16_to_float(static_cast<std::uint16_t>(code));
    if (std::isnan(value)) continue;
    EXPECT_EQ(float_to_bf16(value), code);
  }
}
