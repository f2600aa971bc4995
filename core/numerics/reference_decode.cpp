// float64 references: over the stored cache (what a kernel must reproduce) and over
// the original BF16 tensors (what the cache representation should approximate).
#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/numerics/decode_problem.h"
#include "core/numerics/fp8.h"
#include "core/numerics/parallel_for.h"
#include "core/numerics/problem_originals.h"
#include "core/numerics/rope.h"

namespace tilepath::numerics {

namespace {

// Four independent partial sums: the dot products are the float64 reference's hot loop.
double dot(const double* a, const double* b, int n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}

const std::array<double, 256>& e4m3_values() {
  static const std::array<double, 256> table = [] {
    std::array<double, 256> t{};
    for (int c = 0; c < 256; ++c) t[c] = e4m3_to_float(static_cast<std::uint8_t>(c));
    return t;
  }();
  return table;
}

// out = sum_t softmax(q.k_t * scale)_t v_t, keys/values as rows of head_dim doubles.
void attend(const std::vector<double>& q, const std::vector<double>& keys, const std::vector<double>& values,
            int tokens, int head_dim, double softmax_scale, double* out) {
  std::vector<double> scores(tokens);
  double max_score = -INFINITY;
  for (int t = 0; t < tokens; ++t) {
    scores[t] = dot(q.data(), &keys[static_cast<std::size_t>(t) * head_dim], head_dim) * softmax_scale;
    max_score = std::max(max_score, scores[t]);
  }
  double denominator = 0;
  for (int d = 0; d < head_dim; ++d) out[d] = 0;
  for (int t = 0; t < tokens; ++t) {
    const double weight = std::exp(scores[t] - max_score);
    denominator += weight;
    for (int d = 0; d < head_dim; ++d) out[d] += weight * values[static_cast<std::size_t>(t) * head_dim + d];
  }
  for (int d = 0; d < head_dim; ++d) out[d] /= denominator;
}

}  // namespace

float quantize_q_row_e4m3(const std::uint16_t* q_bf16, int head_dim, std::uint8_t* q8_out) {
  float amax = 0.0f;
  for (int d = 0; d < head_dim; ++d) amax = std::max(amax, std::fabs(bf16_to_float(q_bf16[d])));
  const float scale = amax > 0.0f ? amax / kE4M3Max : 1.0f;
  for (int d = 0; d < head_dim; ++d) q8_out[d] = float_to_e4m3(bf16_to_float(q_bf16[d]) / scale);
  return scale;
}

std::vector<double> reference_decode(const DecodeProblem& p) {
  std::vector<int> all(p.op.batch);
  for (int b = 0; b < p.op.batch; ++b) all[b] = b;
  return reference_decode(p, all);
}

std::vector<double> reference_decode(const DecodeProblem& p, const std::vector<int>& requests) {
  const OperatingPoint& op = p.op;
  const int D = op.head_dim, Hk = op.kv_heads, group_size = op.gqa_ratio();
  const bool k8 = !p.k8.empty(), v8 = !p.v8.empty(), per_head = p.k_scale.size() > 1;
  const bool fp8_q = op.k_path == KPath::fp8_qk;
  const auto& e4m3 = e4m3_values();
  // A pre-RoPE cache stores unrotated keys: rotate each reconstructed key at its position.
  const bool rotate_keys = op.rope == RopeLayout::pre_rope;
  const RopeTable rope =
      rotate_keys ? RopeTable::build(*std::max_element(p.lengths.begin(), p.lengths.end()), D) : RopeTable{};
  for (int b : requests) {
    if (b < 0 || b >= op.batch)
      throw std::out_of_range("reference_decode: request " + std::to_string(b) + " out of range");
  }
  std::vector<double> out(requests.size() * op.q_heads * D);

  // One item = one (request, kv head): dequantize that head's keys/values once for its q heads.
  parallel_for(static_cast<std::int64_t>(requests.size()) * Hk, [&](std::int64_t item) {
    const std::size_t out_request = static_cast<std::size_t>(item / Hk);
    const int b = requests[out_request], h = static_cast<int>(item % Hk);
    const int len = p.lengths[b];
    const double k_scale = p.k_scale[per_head ? h : 0], v_scale = p.v_scale[per_head ? h : 0];
    std::vector<double> keys(static_cast<std::size_t>(len) * D), values(keys.size());
    for (int t = 0; t < len; ++t) {
      const std::int32_t page = p.page_table[static_cast<std::size_t>(b) * p.max_pages_per_seq + t / op.page_size];
      const std::size_t src = ((static_cast<std::size_t>(page) * op.page_size + t % op.page_size) * Hk + h) * D;
      for (int d = 0; d < D; ++d) {
        double k = k8 ? e4m3[p.k8[src + d]] * k_scale : bf16_to_float(p.k16[src + d]);
        if (!p.k_bias.empty()) k += p.k_bias[static_cast<std::size_t>(h) * D + d];
        keys[static_cast<std::size_t>(t) * D + d] = k;
        values[static_cast<std::size_t>(t) * D + d] =
            v8 ? e4m3[p.v8[src + d]] * v_scale : bf16_to_float(p.v16[src + d]);
      }
      if (rotate_keys) rope.rotate(&keys[static_cast<std::size_t>(t) * D], t);
    }
    std::vector<double> q(D);
    std::vector<std::uint8_t> q8(D);
    for (int g = 0; g < group_size; ++g) {
      const int qh = h * group_size + g;
      const std::size_t q_offset = (static_cast<std::size_t>(b) * op.q_heads + qh) * D;
      const std::size_t out_offset = (out_request * op.q_heads + qh) * D;
      if (fp8_q) {
        const double q_scale = quantize_q_row_e4m3(&p.q[q_offset], D, q8.data());
        for (int d = 0; d < D; ++d) q[d] = e4m3[q8[d]] * q_scale;
      } else {
        for (int d = 0; d < D; ++d) q[d] = bf16_to_float(p.q[q_offset + d]);
      }
      attend(q, keys, values, len, D, p.softmax_scale, &out[out_offset]);
    }
  });
  return out;
}

std::vector<double> reference_decode_original(const OperatingPoint& op, std::uint64_t seed, KeyDistribution dist) {
  op.validate();
  const detail::ProblemOriginals originals(op, seed, dist);
  const int D = op.head_dim, Hk = op.kv_heads, group_size = op.gqa_ratio();
  // Same softmax scale as make_problem (a float), so only the cache representation differs.
  const double softmax_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  std::vector<double> out(static_cast<std::size_t>(op.batch) * op.q_heads * D);
  parallel_for(op.batch, [&](std::int64_t b) {
    std::vector<float> keys, values;
    originals.keys(static_cast<int>(b), keys);
    originals.values(static_cast<int>(b), values);
    const int len = originals.lengths()[b];
    std::vector<double> head_keys(static_cast<std::size_t>(len) * D), head_values(head_keys.size()), q(D);
    for (int h = 0; h < Hk; ++h) {
      for (int t = 0; t < len; ++t) {
        for (int d = 0; d < D; ++d) {
          head_keys[static_cast<std::size_t>(t) * D + d] = keys[(static_cast<std::size_t>(t) * Hk + h) * D + d];
          head_values[static_cast<std::size_t>(t) * D + d] = values[(static_cast<std::size_t>(t) * Hk + h) * D + d];
        }
        if (op.rope == RopeLayout::pre_rope) originals.rope().rotate(&head_keys[static_cast<std::size_t>(t) * D], t);
      }
      for (int g = 0; g < group_size; ++g) {
        const std::size_t q_offset = (static_cast<std::size_t>(b) * op.q_heads + h * group_size + g) * D;
        for (int d = 0; d < D; ++d) q[d] = bf16_to_float(originals.q()[q_offset + d]);
        attend(q, head_keys, head_values, len, D, softmax_scale, &out[q_offset]);
      }
    }
  });
  return out;
}

}  // namespace tilepath::numerics
