// E4M3 FNUZ (gfx942's FP8) against the format's definition: every code decoded, every
// finite code round-tripped, rounding checked against a brute-force nearest-even search,
// saturation, the absent negative zero, and the OCP -> FNUZ re-encoding of the cache.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "core/numerics/fp8.h"
#include "core/numerics/fp8_fnuz.h"

using namespace tilepath::numerics;

namespace {

// Value of a code straight from the FNUZ definition (bias 8; 0x80 is NaN), written
// independently of fp8_fnuz.cpp.
double fnuz_definition(int code) {
  const int sign = (code >> 7) & 1, exponent = (code >> 3) & 15, mantissa = code & 7;
  const double magnitude =
      exponent == 0 ? mantissa / 8.0 * std::pow(2.0, -7) : (1.0 + mantissa / 8.0) * std::pow(2.0, exponent - 8);
  return sign ? -magnitude : magnitude;
}

// Nearest finite code by |value - x| in double, ties to the even code, |x| >= 240
// saturated, a zero result unsigned, NaN -> 0x80.
std::uint8_t fnuz_brute_force(float x) {
  if (std::isnan(x)) return 0x80;
  const double magnitude = std::fabs(static_cast<double>(x));
  int best = 0x7F;
  if (magnitude < 240.0) {
    double best_distance = std::numeric_limits<double>::infinity();
    for (int code = 0; code <= 0x7F; ++code) {
      const double distance = std::fabs(fnuz_definition(code) - magnitude);
      if (distance < best_distance || (distance == best_distance && (code & 1) == 0)) {
        best = code;
        best_distance = distance;
      }
    }
  }
  if (best == 0) return 0;
  return static_cast<std::uint8_t>((std::signbit(x) ? 0x80 : 0) | best);
}

}  // namespace

TEST(E4M3Fnuz, AllCodesDecodeToDefinition) {
  for (int code = 0; code < 256; ++code) {
    const float value = e4m3_fnuz_to_float(static_cast<std::uint8_t>(code));
    if (code == 0x80) {
      EXPECT_TRUE(std::isnan(value)) << "0x80 is the only NaN";
    } else {
      EXPECT_FALSE(std::isnan(value)) << code;
      EXPECT_EQ(static_cast<double>(value), fnuz_definition(code)) << "code " << code;
    }
  }
  EXPECT_EQ(e4m3_fnuz_to_float(0x7F), 240.0f);
  EXPECT_EQ(e4m3_fnuz_to_float(0xFF), -240.0f);
  EXPECT_EQ(e4m3_fnuz_to_float(0x01), std::ldexp(1.0f, -10));
  EXPECT_EQ(e4m3_fnuz_to_float(0x08), std::ldexp(1.0f, -7));
}

TEST(E4M3Fnuz, EveryFiniteCodeRoundTrips) {
  for (int code = 0; code < 256; ++code) {
    if (code == 0x80) continue;
    const auto bits = static_cast<std::uint8_t>(code);
    EXPECT_EQ(float_to_e4m3_fnuz(e4m3_fnuz_to_float(bits)), bits) << "code " << code;
  }
}

TEST(E4M3Fnuz, MidpointsRoundToEvenAndNeighboursToNearest) {
  // Between every pair of adjacent finite codes of each sign: the midpoint goes to the even
  // code; one float step either side of it to the nearer code.
  for (int sign : {0, 0x80}) {
    for (int code = 0; code < 0x7F; ++code) {
      const float lo = e4m3_fnuz_to_float(static_cast<std::uint8_t>(code));
      const float hi = e4m3_fnuz_to_float(static_cast<std::uint8_t>(code + 1));
      const float mid = 0.5f * (lo + hi);  // exact: the grid has 4 significant bits
      const float s = sign ? -1.0f : 1.0f;
      const int even = (code & 1) == 0 ? code : code + 1;
      const std::uint8_t expect_even = even == 0 ? 0 : static_cast<std::uint8_t>(sign | even);
      EXPECT_EQ(float_to_e4m3_fnuz(s * mid), expect_even) << "midpoint of " << code;
      const std::uint8_t expect_lo = code == 0 ? 0 : static_cast<std::uint8_t>(sign | code);
      EXPECT_EQ(float_to_e4m3_fnuz(s * std::nextafter(mid, 0.0f)), expect_lo) << code;
      EXPECT_EQ(float_to_e4m3_fnuz(s * std::nextafter(mid, 1000.0f)), static_cast<std::uint8_t>(sign | (code + 1)))
          << code;
    }
  }
}

TEST(E4M3Fnuz, RandomFloatsEncodeLikeBruteForce) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> exponent(-14.0f, 9.0f);
  for (int i = 0; i < 20000; ++i) {
    const float x = (i % 2 ? -1.0f : 1.0f) * std::exp2(exponent(rng));
    ASSERT_EQ(float_to_e4m3_fnuz(x), fnuz_brute_force(x)) << "x=" << x;
  }
}

TEST(E4M3Fnuz, SaturatesAndHasNoNegativeZero) {
  EXPECT_EQ(float_to_e4m3_fnuz(240.0f), 0x7F);
  EXPECT_EQ(float_to_e4m3_fnuz(247.9f), 0x7F);
  EXPECT_EQ(float_to_e4m3_fnuz(1e30f), 0x7F);
  EXPECT_EQ(float_to_e4m3_fnuz(std::numeric_limits<float>::infinity()), 0x7F);
  EXPECT_EQ(float_to_e4m3_fnuz(-std::numeric_limits<float>::infinity()), 0xFF);
  EXPECT_EQ(float_to_e4m3_fnuz(std::numeric_limits<float>::quiet_NaN()), 0x80);
  EXPECT_EQ(float_to_e4m3_fnuz(-0.0f), 0x00);
  EXPECT_EQ(float_to_e4m3_fnuz(-1e-10f), 0x00);                 // rounds to zero: unsigned
  EXPECT_EQ(float_to_e4m3_fnuz(-std::ldexp(1.0f, -11)), 0x00);  // half the smallest subnormal: even = 0
  EXPECT_EQ(float_to_e4m3_fnuz(-std::ldexp(1.5f, -11)), 0x81);  // above half: -2^-10
}

TEST(E4M3Fnuz, OcpCodesReencodeToHalfTheirValue) {
  for (int code = 0; code < 256; ++code) {
    const auto ocp = static_cast<std::uint8_t>(code);
    const float ocp_value = e4m3_to_float(ocp);
    const std::uint8_t fnuz = e4m3_ocp_to_fnuz(ocp);
    if (std::isnan(ocp_value)) {
      EXPECT_EQ(fnuz, 0x80) << code;
      continue;
    }
    EXPECT_NE(fnuz, 0x80) << "a finite OCP code must not become the FNUZ NaN: " << code;
    EXPECT_EQ(e4m3_fnuz_to_float(fnuz) * kOcpToFnuzScaleFactor, ocp_value) << "code " << code;
  }
  EXPECT_EQ(e4m3_ocp_to_fnuz(0x80), 0x00);  // OCP -0: FNUZ has no -0 (0x80 would be NaN)
}

TEST(E4M3Fnuz, QRowQuantizationUsesTheFnuzRange) {
  std::vector<std::uint16_t> q = {float_to_bf16(-3.0f), float_to_bf16(1.5f), float_to_bf16(0.0f), float_to_bf16(0.75f)};
  std::vector<std::uint8_t> q8(q.size());
  const float scale = quantize_q_row_e4m3_fnuz(q.data(), static_cast<int>(q.size()), q8.data());
  EXPECT_EQ(scale, 3.0f / 240.0f);
  EXPECT_EQ(q8[0], 0xFF);  // the amax element is -240
  EXPECT_EQ(e4m3_fnuz_to_float(q8[1]), 120.0f);
  EXPECT_EQ(q8[2], 0x00);
  EXPECT_EQ(e4m3_fnuz_to_float(q8[3]), 60.0f);
}
