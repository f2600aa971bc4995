// The float32 emulation of the HIP kernels' arithmetic (fnuz_decode_emulation.h).
#include "core/numerics/fnuz_decode_emulation.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/numerics/fp8.h"
#include "core/numerics/fp8_fnuz.h"

namespace tilepath::numerics {
namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr int kTileTokens = 32;  // the kernels' per-wave tile (two 16-token MFMA tiles)

struct HeadInputs {
  std::vector<float> keys, values;  // [len][D], FNUZ or BF16 element values, unscaled
};

}  // namespace

DecodeProblem to_fnuz_cache(const DecodeProblem& ocp_problem) {
  DecodeProblem p = ocp_problem;
  for (std::uint8_t& b : p.k8) b = e4m3_ocp_to_fnuz(b);
  for (std::uint8_t& b : p.v8) b = e4m3_ocp_to_fnuz(b);
  if (!p.k8.empty())
    for (float& s : p.k_scale) s *= kOcpToFnuzScaleFactor;
  if (!p.v8.empty())
    for (float& s : p.v_scale) s *= kOcpToFnuzScaleFactor;
  return p;
}

std::vector<float> emulate_hip_decode(const DecodeProblem& p, const std::vector<int>& requests) {
  const OperatingPoint& op = p.op;
  if (op.k_repr == KRepr::mxfp8 || op.rope == RopeLayout::pre_rope)
    throw std::invalid_argument("emulate_hip_decode: k_repr mxfp8 and rope pre_rope have no HIP kernel");
  const int D = op.head_dim, Hk = op.kv_heads, group = op.gqa_ratio();
  const bool k8 = !p.k8.empty(), v8 = !p.v8.empty(), per_head = p.k_scale.size() > 1;
  const bool fp8_q = op.k_path == KPath::fp8_qk;
  const bool fp8_pv = v8 && op.mode == TransformMode::k_only;
  std::vector<float> out(requests.size() * op.q_heads * D, 0.0f);
  for (std::size_t r = 0; r < requests.size(); ++r) {
    const int b = requests[r], len = p.lengths[b];
    for (int h = 0; h < Hk; ++h) {
      HeadInputs in;
      in.keys.resize(static_cast<std::size_t>(len) * D);
      in.values.resize(in.keys.size());
      for (int t = 0; t < len; ++t) {
        const std::int32_t page = p.page_table[static_cast<std::size_t>(b) * p.max_pages_per_seq + t / op.page_size];
        const std::size_t src = ((static_cast<std::size_t>(page) * op.page_size + t % op.page_size) * Hk + h) * D;
        for (int d = 0; d < D; ++d) {
          in.keys[static_cast<std::size_t>(t) * D + d] =
              k8 ? e4m3_fnuz_to_float(p.k8[src + d]) : bf16_to_float(p.k16[src + d]);
          in.values[static_cast<std::size_t>(t) * D + d] =
              v8 ? e4m3_fnuz_to_float(p.v8[src + d]) : bf16_to_float(p.v16[src + d]);
        }
      }
      const float k_scale = k8 ? p.k_scale[per_head ? h : 0] : 1.0f;
      const float v_scale = v8 ? p.v_scale[per_head ? h : 0] : 1.0f;
      for (int g = 0; g < group; ++g) {
        const int qh = h * group + g;
        const std::uint16_t* q_row = &p.q[(static_cast<std::size_t>(b) * op.q_heads + qh) * D];
        std::vector<float> q(D);
        float q_scale = 1.0f;
        if (fp8_q) {
          std::vector<std::uint8_t> q8(D);
          q_scale = quantize_q_row_e4m3_fnuz(q_row, D, q8.data());
          for (int d = 0; d < D; ++d) q[d] = e4m3_fnuz_to_float(q8[d]);
        } else {
          for (int d = 0; d < D; ++d) q[d] = bf16_to_float(q_row[d]);
        }
        // One multiply per F32 logit: softmax scale, K scale and Q scale in log2 units.
        const float row_scale = p.softmax_scale * kLog2e * k_scale * q_scale;
        float m = -INFINITY, l = 0.0f;
        std::vector<float> o(D, 0.0f);
        for (int first = 0; first < len; first += kTileTokens) {
          const int end = std::min(len, first + kTileTokens);
          float x[kTileTokens];
          float tile_max = -INFINITY;
          for (int t = first; t < first + kTileTokens; ++t) {
            float s = 0.0f;
            if (t < end)
              for (int d = 0; d < D; ++d) s += q[d] * in.keys[static_cast<std::size_t>(t) * D + d];
            x[t - first] = t < end ? s * row_scale : -INFINITY;
            tile_max = std::max(tile_max, x[t - first]);
          }
          const float m_new = std::max(m, tile_max);
          const float m_use = m_new == -INFINITY ? 0.0f : m_new;
          const float alpha = std::exp2(m - m_use);
          float sum = 0.0f;
          for (int d = 0; d < D; ++d) o[d] *= alpha;
          for (int t = first; t < end; ++t) {
            const float e = std::exp2(x[t - first] - m_use);
            sum += e;
            const float p_operand = fp8_pv ? e4m3_fnuz_to_float(float_to_e4m3_fnuz(e * kFnuzPScale)) : round_bf16(e);
            for (int d = 0; d < D; ++d) o[d] += p_operand * in.values[static_cast<std::size_t>(t) * D + d];
          }
          l = l * alpha + sum;
          m = m_new;
        }
        const float out_scale = v_scale / (fp8_pv ? kFnuzPScale : 1.0f);
        float* dst = &out[(r * op.q_heads + qh) * D];
        for (int d = 0; d < D; ++d) dst[d] = l > 0.0f ? o[d] / l * out_scale : 0.0f;
      }
    }
  }
  return out;
}

}  // namespace tilepath::numerics
