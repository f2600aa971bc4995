#pragma once
// combine: the split-KV merge. One workgroup of 64 lanes per (request, query head):
//   O = Σ_s 2^(lse_s - lse_max)·O_s / Σ_s 2^(lse_s - lse_max)   (log2-domain LSEs)

#include "backends/hip/decode_launch.h"
#include "backends/hip/kernels/device_primitives.h"

namespace tilepath::hip::kernels {

struct CombineParams {
  DecodeArgs args;
};

template <int kD>
__global__ void __launch_bounds__(64) combine_kernel(const CombineParams p) {
  const DecodeArgs& a = p.args;
  const long long row = __builtin_amdgcn_workgroup_id_x();  // batch·q_heads + head
  const long long rows = static_cast<long long>(a.batch) * a.q_heads;
  float lse_max = -__builtin_inff();
  for (int s = 0; s < a.splits; ++s) lse_max = __builtin_fmaxf(lse_max, a.partial_lse[s * rows + row]);
  float denominator = 0.0f;
  float sum[kD / kWaveSize] = {};
  if (lse_max != -__builtin_inff()) {
    for (int s = 0; s < a.splits; ++s) {
      const float weight = fast_exp2(a.partial_lse[s * rows + row] - lse_max);  // empty split: 0
      denominator += weight;
#pragma unroll
      for (int j = 0; j < kD / kWaveSize; ++j)
        sum[j] += weight * a.partial_out[(s * rows + row) * kD + j * kWaveSize + lane_index()];
    }
  }
#pragma unroll
  for (int j = 0; j < kD / kWaveSize; ++j) {
    const float value = denominator > 0.0f ? sum[j] / denominator : 0.0f;
    a.out[row * kD + j * kWaveSize + lane_index()] = static_cast<std::uint16_t>(bf16_bits(value));
  }
}

}  // namespace tilepath::hip::kernels
