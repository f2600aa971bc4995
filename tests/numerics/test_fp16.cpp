// IEEE binary16 -> float over all 65536 codes against the format's definition.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>

#include "core/numerics/fp16.h"

using namespace tilepath::numerics;

namespace {

// s eeeee mmmmmmmmmm, bias 15, evaluated in double (exact for every finite code).
double fp16_definition(int code) {
  const int sign = (code >> 15) & 1, exponent = (code >> 10) & 0x1F, mantissa = code & 0x3FF;
  const double magnitude =
      exponent == 0 ? mantissa * std::pow(2.0, -24) : (1.0 + mantissa / 1024.0) * std::pow(2.0, exponent - 15);
  return sign ? -magnitude : magnitude;
}

}  // namespace

TEST(Fp16, EveryFiniteCodeConvertsExactlyWithItsSign) {
  int subnormals = 0;
  for (int code = 0; code < 0x10000; ++code) {
    if (((code >> 10) & 0x1F) == 0x1F) continue;
    if (((code >> 10) & 0x1F) == 0 && (code & 0x3FF) != 0) ++subnormals;
    const float got = fp16_to_float(static_cast<std::uint16_t>(code));
    ASSERT_EQ(static_cast<double>(got), fp16_definition(code)) << "code 0x" << std::hex << code;
    ASSERT_EQ(std::signbit(got), (code & 0x8000) != 0) << "code 0x" << std::hex << code;
  }
  EXPECT_EQ(subnormals, 2 * 1023);
}

TEST(Fp16, InfinitiesAndNaNs) {
  EXPECT_EQ(fp16_to_float(0x7C00), INFINITY);
  EXPECT_EQ(fp16_to_float(0xFC00), -INFINITY);
  for (int mantissa = 1; mantissa < 0x400; ++mantissa) {
    for (const int sign : {0, 0x8000}) {
      const float got = fp16_to_float(static_cast<std::uint16_t>(sign | 0x7C00 | mantissa));
      ASSERT_TRUE(std::isnan(got)) << mantissa;
      ASSERT_EQ(std::signbit(got), sign != 0);
      ASSERT_NE(std::bit_cast<std::uint32_t>(got) & 0x400000u, 0u) << "quiet NaN";
    }
  }
}

TEST(Fp16, LandmarksOfTheFormat) {
  EXPECT_EQ(fp16_to_float(0x3C00), 1.0f);
  EXPECT_EQ(fp16_to_float(0x7BFF), 65504.0f);               // largest finite
  EXPECT_EQ(fp16_to_float(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(fp16_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(fp16_to_float(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(fp16_to_float(0x3C01), 1.0f + std::ldexp(1.0f, -10));
}
