#pragma once
// Bit-exact FP8 E4M3 (OCP "e4m3fn": bias 7, no infinities, 0x7F/0xFF = NaN, max 448)
// and BF16 conversions, matching the GPU's cvt.rn.satfinite.e4m3x2.f32 / cvt.rn.bf16.f32.

#include <cstdint>

namespace tilepath::numerics {

// Round to nearest even, saturate finite overflow to +-448, NaN -> 0x7F.
std::uint8_t float_to_e4m3(float x);
float e4m3_to_float(std::uint8_t bits);

// Round to nearest even; NaN preserved (quiet).
std::uint16_t float_to_bf16(float x);
float bf16_to_float(std::uint16_t bits);
inline float round_bf16(float x) { return bf16_to_float(float_to_bf16(x)); }

inline constexpr float kE4M3Max = 448.0f;

}  // namespace tilepath::numerics
