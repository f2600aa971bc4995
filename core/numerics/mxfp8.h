#pragma once
// MXFP8 E4M3 (OCP Microscaling Formats v1.0): a row is cut into blocks of 32 elements
// along the head dimension; each block stores one shared power-of-two scale as E8M0
// and 32 FP8 E4M3 elements (fp8.h's codec). value = e4m3(element) * 2^(scale - 127).
//
// E8M0 (the spec's UE8M0): 8-bit biased exponent, bias 127, no sign, no mantissa.
// Code e in [0, 254] is 2^(e - 127); 0xFF is NaN, which makes the whole block NaN.

#include <cstdint>
#include <vector>

namespace tilepath::numerics {

inline constexpr int kMxBlockSize = 32;
// Exponent of E4M3's largest normal: 448 = 1.75 * 2^8 (the spec's emax_elem).
inline constexpr int kE4M3MaxNormalExponent = 8;
inline constexpr int kE8M0Bias = 127;
inline constexpr int kE8M0MinExponent = -127;  // code 0x00
inline constexpr int kE8M0MaxExponent = 127;   // code 0xFE
inline constexpr std::uint8_t kE8M0NaN = 0xFF;

// 2^(code - 127) (exact: float holds 2^-127 as a subnormal and 2^127 as a normal); NaN for 0xFF.
float e8m0_to_float(std::uint8_t code);
// The code of 2^exponent; throws std::invalid_argument outside [-127, 127].
std::uint8_t e8m0_from_exponent(int exponent);

// elements[i] belongs to block i / 32, whose scale is scales[i / 32].
struct Mxfp8Row {
  std::vector<std::uint8_t> elements;  // E4M3 codes, n of them
  std::vector<std::uint8_t> scales;    // E8M0 codes, n / 32 of them
};

// Quantizes n floats (n > 0 and a multiple of 32, else std::invalid_argument). Per block:
//   amax = max |x| over the block's finite values
//   X    = clamp(floor(log2(amax)) - 8, -127, 127)      the shared exponent
//   element = float_to_e4m3(x / 2^X)                     round to nearest even
// An all-zero block (amax = 0, log2 = -inf) gets the clamp's lower end, X = -127 (code 0x00).
// Unless the clamp applies, the block maximum scales into [256, 512), but E4M3's top
// binade ends at 448 = 1.75 * 2^8: a scaled value that rounds above 448 saturates to 448
// (see mxfp8.cpp). NaN stays NaN (0x7F), +-inf saturates to +-448; neither sets amax.
// Scaling is std::ldexp by a power of two, exact, so the result is bit-exact.
Mxfp8Row mxfp8_quantize(const float* x, int n);

// One element's value: e4m3_to_float(element) * 2^(scale - 127), exact where float can
// hold it (always for rows from mxfp8_quantize, whose scales stop at 2^119); a
// hand-built scale above that with a large element overflows to +-inf. NaN when either
// code is NaN.
float mxfp8_value(std::uint8_t element, std::uint8_t scale);

// out[i] = mxfp8_value(row.elements[i], row.scales[i / 32]) for all row.elements.size()
// values. Throws std::invalid_argument when scales.size() * 32 != elements.size().
void mxfp8_dequantize(const Mxfp8Row& row, float* out);

}  // namespace tilepath::numerics
