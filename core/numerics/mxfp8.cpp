#include "core/numerics/mxfp8.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/numerics/fp8_inline.h"

namespace tilepath::numerics {

namespace {

// floor(log2(amax)) - emax_elem, clamped to what E8M0 can store. std::ilogb is the exact
// floor(log2) of a finite non-zero float, subnormals included.
int shared_exponent(float amax) {
  if (amax == 0.0f) return kE8M0MinExponent;
  const int exponent = std::ilogb(amax) - kE4M3MaxNormalExponent;
  return std::clamp(exponent, kE8M0MinExponent, kE8M0MaxExponent);
}

// Largest finite magnitude in the block; NaN and infinities do not set the scale, so
// one bad value does not flush the other 31 to zero.
float finite_amax(const float* block) {
  float amax = 0.0f;
  for (int i = 0; i < kMxBlockSize; ++i) {
    if (std::isfinite(block[i])) amax = std::max(amax, std::fabs(block[i]));
  }
  return amax;
}

}  // namespace

float e8m0_to_float(std::uint8_t code) {
  if (code == kE8M0NaN) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, static_cast<int>(code) - kE8M0Bias);
}

std::uint8_t e8m0_from_exponent(int exponent) {
  if (exponent < kE8M0MinExponent || exponent > kE8M0MaxExponent) {
    throw std::invalid_argument("E8M0 holds exponents -127..127, not " + std::to_string(exponent));
  }
  return static_cast<std::uint8_t>(exponent + kE8M0Bias);
}

// The spec's conversion (section 6.3) quantizes each x / X to the element type "clamping
// normal numbers": a scaled value beyond the element's largest normal becomes that
// normal. We do exactly that through float_to_e4m3 (cvt.rn.satfinite): round to nearest
// even, and any magnitude that would round above 448 becomes +-448. Non-finite inputs
// are this module's choice: NaN -> the E4M3 NaN (0x7F), +-inf -> +-448 * 2^X like the
// satfinite conversion; neither takes part in amax.
Mxfp8Row mxfp8_quantize(const float* x, int n) {
  if (n <= 0 || n % kMxBlockSize != 0) {
    throw std::invalid_argument("MXFP8 quantizes rows of a positive multiple of " + std::to_string(kMxBlockSize) +
                                " values (one scale per 32-element block), not " + std::to_string(n));
  }
  const int blocks = n / kMxBlockSize;
  Mxfp8Row row;
  row.elements.resize(static_cast<std::size_t>(n));
  row.scales.resize(static_cast<std::size_t>(blocks));
  for (int b = 0; b < blocks; ++b) {
    const float* block = x + static_cast<std::ptrdiff_t>(b) * kMxBlockSize;
    const int exponent = shared_exponent(finite_amax(block));
    row.scales[static_cast<std::size_t>(b)] = e8m0_from_exponent(exponent);
    for (int i = 0; i < kMxBlockSize; ++i) {
      // ldexp by a power of two is exact unless the result leaves float's range; here
      // |x| / 2^X < 2^9, and below 2^-126 only the E4M3 subnormal grid (2^-9) matters.
      const float scaled = std::ldexp(block[i], -exponent);
      row.elements[static_cast<std::size_t>(b) * kMxBlockSize + static_cast<std::size_t>(i)] =
          inline_codec::float_to_e4m3(scaled);
    }
  }
  return row;
}

float mxfp8_value(std::uint8_t element, std::uint8_t scale) {
  if (scale == kE8M0NaN) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(inline_codec::e4m3_to_float(element), static_cast<int>(scale) - kE8M0Bias);
}

void mxfp8_dequantize(const Mxfp8Row& row, float* out) {
  if (row.scales.size() * kMxBlockSize != row.elements.size()) {
    throw std::invalid_argument("MXFP8 row has " + std::to_string(row.elements.size()) + " elements but " +
                                std::to_string(row.scales.size()) + " scales (one per 32 elements)");
  }
  for (std::size_t i = 0; i < row.elements.size(); ++i) {
    out[i] = mxfp8_value(row.elements[i], row.scales[i / kMxBlockSize]);
  }
}

}  // namespace tilepath::numerics
