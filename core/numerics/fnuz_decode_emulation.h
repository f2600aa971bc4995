#pragma once
// A host emulation, in float32, of the arithmetic of the HIP decode kernels (gfx942,
// backends/hip/kernels): the OCP cache re-encoded to E4M3 FNUZ with doubled scales,
// fp8_qk's query quantized to FNUZ (amax/240), QK products summed in float32 (the MFMA
// multiplies FP8 or BF16 exactly into an F32 accumulator), the K scale applied after the
// product on each F32 logit, an online softmax in log2 units over 32-token tiles, FP8 PV
// (mode k_only) on P quantized as FNUZ(P * 128), and the V scale applied to the output.
// It lets the HIP numerics be checked on a machine without an AMD GPU: against the
// float64 reference (reference_decode with QQuantization::e4m3_fnuz) it must stay within
// default_tolerance, as the kernels' output must on the device.

#include <cstdint>
#include <vector>

#include "core/numerics/decode_problem.h"

namespace tilepath::numerics {

// The cache as the HIP plugin uploads it: FP8 bytes re-encoded to FNUZ (e4m3_ocp_to_fnuz)
// and their scales doubled; BF16 tensors and everything else unchanged. Exact: every
// dequantized value equals the OCP one.
DecodeProblem to_fnuz_cache(const DecodeProblem& ocp_problem);

// The kernels' output for the listed requests, [requests.size()][q_heads][head_dim], from a
// problem already re-encoded by to_fnuz_cache. Handles the plain representation (and
// prebias, which the kernels treat as plain); mxfp8 and pre_rope throw std::invalid_argument.
std::vector<float> emulate_hip_decode(const DecodeProblem& fnuz_problem, const std::vector<int>& requests);

}  // namespace tilepath::numerics
