#pragma once
// Bit-exact FP8 E4M3 FNUZ, the FP8 of AMD CDNA 3 (gfx942: v_mfma_*_fp8_fp8, v_cvt_pk_fp8_f32),
// and the bridge from the OCP E4M3 cache the store and the CUDA kernels use (fp8.h).
//
// FNUZ layout: s eeee mmm, exponent bias 8 (OCP: 7). Exponent field 0 is subnormal
// (m * 2^-10); there is no infinity and no negative zero: 0x80 is the only NaN, so every
// other code is finite and the largest value is 0x7F = 1.875 * 2^7 = 240.
// Encoding: round to nearest even; any magnitude at or beyond 240 (infinity included)
// saturates to +-240 (the HIP kernels clamp before v_cvt_pk_fp8_f32 so the hardware
// agrees); a result that rounds to zero is 0x00 whatever its sign; NaN -> 0x80.

#include <cstdint>

namespace tilepath::numerics {

inline constexpr float kE4M3FnuzMax = 240.0f;
inline constexpr std::uint8_t kE4M3FnuzNaN = 0x80;

// For every finite OCP code c except -0, the FNUZ code with the same bits has exactly half
// the value (the same grid, one exponent lower). Re-encoding an OCP cache to FNUZ therefore
// keeps the bits (0x80, the OCP -0, becomes 0x00; the OCP NaNs become 0x80) and doubles
// the dequantization scale: ocp_value(c) * s == fnuz_value(ocp_to_fnuz(c)) * (s * 2).
inline constexpr float kOcpToFnuzScaleFactor = 2.0f;

// P in [0, 1] enters an FNUZ PV product as P * 128 (a power of two, <= 240, so exact
// scaling and no saturation); the output is divided by it again.
inline constexpr float kFnuzPScale = 128.0f;

std::uint8_t float_to_e4m3_fnuz(float x);
float e4m3_fnuz_to_float(std::uint8_t bits);

// The FNUZ code of half the OCP code's value (see kOcpToFnuzScaleFactor); exact for every
// finite OCP code.
std::uint8_t e4m3_ocp_to_fnuz(std::uint8_t ocp_bits);

// The fp8_qk Q quantization of the HIP kernels, one (batch, q head) row: scale = amax/240
// in float (1 for an all-zero row), q8[d] = float_to_e4m3_fnuz(q[d] / scale). Returns the
// scale. The OCP counterpart is quantize_q_row_e4m3 (decode_problem.h).
float quantize_q_row_e4m3_fnuz(const std::uint16_t* q_bf16, int head_dim, std::uint8_t* q8_out);

}  // namespace tilepath::numerics
