#pragma once
// Runs the HIP decode kernels (backends/hip/kernels) on the host: the same source,
// compiled as plain C++ with every amdgcn builtin emulated lane by lane (a workgroup is
// 256 host threads; shuffles, MFMAs and barriers exchange through shared memory). The
// MFMAs follow the 16x16 operand layouts the kernels are written for; FP8 is E4M3 FNUZ
// (core/numerics/fp8_fnuz.h). No GPU involved: it checks the kernels' indexing, paging,
// GQA, softmax, scales, the wave merge and split-KV combine against the float64 reference.

#include <cstdint>
#include <string>
#include <vector>

#include "backends/hip/decode_launch.h"

namespace tilepath::hip::emulation {

// Launches the main kernel of the variant for args and ablation (and combine when
// splits > 1) over the whole grid; args' pointers are host memory. Returns "" or why it
// could not run (no such variant compiled into the emulation).
std::string run_decode(const DecodeArgs& args, const Ablation& ablation = {});

}  // namespace tilepath::hip::emulation
