// E4M3 FNUZ codec (fp8_fnuz.h), written like the OCP codec of fp8_inline.h.
#include "core/numerics/fp8_fnuz.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "core/numerics/fp8.h"

namespace tilepath::numerics {
namespace {

constexpr std::uint8_t kFnuzMaxCode = 0x7F;  // 240
constexpr std::uint8_t kSignBit = 0x80;
constexpr float kFnuzMinNormal = 0.0078125f;  // 2^-7

// |x| encoded, with |x| finite and < 240.
std::uint8_t encode_fnuz_magnitude(float magnitude) {
  if (magnitude < kFnuzMinNormal) {
    // Subnormal grid: steps of 2^-10; magnitude * 1024 is exact and below 8, so nearbyint
    // under the default rounding mode is RNE; 8 is the smallest normal (0x08) by layout.
    return static_cast<std::uint8_t>(std::nearbyint(magnitude * 1024.0f));
  }
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(magnitude);
  const int exponent = static_cast<int>(bits >> 23) - 127;  // in [-7, 7]
  const std::uint32_t mantissa = bits & 0x7FFFFFu;
  std::uint32_t kept = mantissa >> 20;
  const std::uint32_t dropped = mantissa & 0xFFFFFu;
  constexpr std::uint32_t half = 0x80000u;
  if (dropped > half || (dropped == half && (kept & 1u))) ++kept;  // a carry bumps the exponent
  const std::uint32_t code = (static_cast<std::uint32_t>(exponent + 8) << 3) + kept;
  return static_cast<std::uint8_t>(std::min<std::uint32_t>(code, kFnuzMaxCode));
}

}  // namespace

std::uint8_t float_to_e4m3_fnuz(float x) {
  if (std::isnan(x)) return kE4M3FnuzNaN;
  const float magnitude = std::fabs(x);
  const std::uint8_t code = magnitude >= kE4M3FnuzMax ? kFnuzMaxCode : encode_fnuz_magnitude(magnitude);
  if (code == 0) return 0;  // no negative zero: 0x80 is NaN
  return std::signbit(x) ? static_cast<std::uint8_t>(kSignBit | code) : code;
}

float e4m3_fnuz_to_float(std::uint8_t bits) {
  if (bits == kE4M3FnuzNaN) return std::numeric_limits<float>::quiet_NaN();
  const int exponent_field = (bits >> 3) & 0xF;
  const int mantissa = bits & 0x7;
  const float magnitude = exponent_field == 0
                              ? std::ldexp(static_cast<float>(mantissa), -10)
                              : std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent_field - 8);
  return (bits & kSignBit) ? -magnitude : magnitude;
}

std::uint8_t e4m3_ocp_to_fnuz(std::uint8_t ocp_bits) {
  if ((ocp_bits & 0x7F) == 0x7F) return kE4M3FnuzNaN;  // OCP NaN
  if (ocp_bits == kSignBit) return 0;                  // OCP -0
  return ocp_bits;
}

float quantize_q_row_e4m3_fnuz(const std::uint16_t* q_bf16, int head_dim, std::uint8_t* q8_out) {
  float amax = 0.0f;
  for (int d = 0; d < head_dim; ++d) amax = std::max(amax, std::fabs(bf16_to_float(q_bf16[d])));
  const float scale = amax > 0.0f ? amax / kE4M3FnuzMax : 1.0f;
  for (int d = 0; d < head_dim; ++d) q8_out[d] = float_to_e4m3_fnuz(bf16_to_float(q_bf16[d]) / scale);
  return scale;
}

}  // namespace tilepath::numerics
