#pragma once
// Inline bodies of the E4M3/BF16 codecs (fp8.h declares the out-of-line API). Hot
// loops (problem generation, kernels' reference paths) include this to avoid a call
// per element; fp8.cpp defines the public functions with the same bodies.
//
// E4M3 layout: s eeee mmm, bias 7. Exponent field 0 is subnormal (m * 2^-9);
// 0x7F/0xFF are NaN; there is no infinity, so the largest finite value is
// 0x7E = 1.75 * 2^8 = 448. Encoding follows cvt.rn.satfinite: round to nearest
// even, anything (infinity included) beyond 448 clamps to +-448, NaN -> 0x7F.

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace tilepath::numerics::inline_codec {

inline constexpr std::uint8_t kE4M3MaxCode = 0x7E;  // 448
inline constexpr std::uint8_t kE4M3NaNCode = 0x7F;
inline constexpr std::uint8_t kE4M3SignBit = 0x80;
inline constexpr float kE4M3MaxValue = 448.0f;
inline constexpr float kE4M3MinNormal = 0.015625f;  // 2^-6

// |x| encoded, with |x| finite and < 448.
inline std::uint8_t encode_e4m3_magnitude(float magnitude) {
  if (magnitude < kE4M3MinNormal) {
    // Subnormal grid: steps of 2^-9. magnitude * 512 is exact (power-of-two scale)
    // and below 8, so nearbyint under the default rounding mode is exactly RNE.
    // A result of 8 is the smallest normal (code 0x08), which the layout gives for free.
    return static_cast<std::uint8_t>(std::nearbyint(magnitude * 512.0f));
  }
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(magnitude);
  const int exponent = static_cast<int>(bits >> 23) - 127;  // in [-6, 8]
  const std::uint32_t mantissa = bits & 0x7FFFFFu;
  std::uint32_t kept = mantissa >> 20;  // top 3 of 23 mantissa bits
  const std::uint32_t dropped = mantissa & 0xFFFFFu;
  constexpr std::uint32_t half = 0x80000u;
  if (dropped > half || (dropped == half && (kept & 1u))) ++kept;  // a carry bumps the exponent
  const std::uint32_t code = (static_cast<std::uint32_t>(exponent + 7) << 3) + kept;
  return static_cast<std::uint8_t>(code > kE4M3MaxCode ? kE4M3MaxCode : code);
}

inline std::uint8_t float_to_e4m3(float x) {
  if (std::isnan(x)) return kE4M3NaNCode;
  const std::uint8_t sign = std::signbit(x) ? kE4M3SignBit : 0;
  const float magnitude = std::fabs(x);
  if (magnitude >= kE4M3MaxValue) return sign | kE4M3MaxCode;  // satfinite, infinity included
  return sign | encode_e4m3_magnitude(magnitude);
}

inline float e4m3_to_float(std::uint8_t bits) {
  const bool negative = (bits & kE4M3SignBit) != 0;
  const int exponent_field = (bits >> 3) & 0xF;
  const int mantissa = bits & 0x7;
  float magnitude;
  if (exponent_field == 0xF && mantissa == 0x7) {
    magnitude = std::numeric_limits<float>::quiet_NaN();
  } else if (exponent_field == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -9);
  } else {
    magnitude = std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent_field - 7);
  }
  return negative ? -magnitude : magnitude;
}

inline std::uint16_t float_to_bf16(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  if (std::isnan(x)) return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);  // keep sign/payload, force quiet
  // Round to nearest even on the 16 dropped bits; overflow correctly rounds to infinity.
  const std::uint32_t rounding_bias = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding_bias) >> 16);
}

inline float bf16_to_float(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

inline float round_bf16(float x) { return bf16_to_float(float_to_bf16(x)); }

}  // namespace tilepath::numerics::inline_codec
