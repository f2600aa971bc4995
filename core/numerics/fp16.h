#pragma once
// IEEE 754 binary16 ("float16", NumPy '<f2') to float. Every binary16 value, subnormals,
// infinities and NaN included, is exactly representable in float, so this is exact.

#include <cstdint>

namespace tilepath::numerics {

// Layout s eeeee mmmmmmmmmm, bias 15: exponent field 0 is subnormal (m * 2^-24), 31 is
// infinity (m == 0) or NaN (m != 0; the payload is kept in the top mantissa bits, and
// the result is always a quiet NaN).
float fp16_to_float(std::uint16_t bits);

}  // namespace tilepath::numerics
