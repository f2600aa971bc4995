#include "core/numerics/fp16.h"

#include <bit>
#include <cmath>

namespace tilepath::numerics {

float fp16_to_float(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1Fu;
  const std::uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0) {
    // Subnormal (or zero): m * 2^-24. ldexp of an integer below 2^10 is exact.
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return std::bit_cast<float>(std::bit_cast<std::uint32_t>(magnitude) | sign);
  }
  if (exponent == 0x1F) {
    // Infinity or NaN: float's all-ones exponent; a NaN keeps its payload and is made quiet.
    const std::uint32_t quiet = mantissa != 0 ? 0x400000u : 0u;
    return std::bit_cast<float>(sign | 0x7F800000u | quiet | (mantissa << 13));
  }
  // Normal: rebias the exponent (15 -> 127) and widen the mantissa (10 -> 23 bits).
  return std::bit_cast<float>(sign | ((exponent + 127u - 15u) << 23) | (mantissa << 13));
}

}  // namespace tilepath::numerics
