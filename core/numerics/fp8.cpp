// Bit-exact E4M3 (OCP e4m3fn) and BF16 codecs; the bodies live in fp8_inline.h.
#include "core/numerics/fp8.h"

#include "core/numerics/fp8_inline.h"

namespace tilepath::numerics {

std::uint8_t float_to_e4m3(float x) { return inline_codec::float_to_e4m3(x); }
float e4m3_to_float(std::uint8_t bits) { return inline_codec::e4m3_to_float(bits); }
std::uint16_t float_to_bf16(float x) { return inline_codec::float_to_bf16(x); }
float bf16_to_float(std::uint16_t bits) { return inline_codec::bf16_to_float(bits); }

}  // namespace tilepath::numerics
