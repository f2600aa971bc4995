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
#include "core/numerics/fp8_fnuz.h"
#include "core/numerics/mxfp8.h"
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

// out = sum_t softmax(q.k_t * scale) v_t, keys/values as rows of head_dim doubles;
// the softmax weights into `weights` when it is given.
void attend(const std::vector<double>& q, const std::vector<double>& keys, const std::vector<double>& values,
            int tokens, int head_dim, double softmax_scale, double* out, std::vector<double>* weights = nullptr) {
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
    scores[t] = weight;
    denominator += weight;
    for (int d = 0; d < head_dim; ++d) out[d] += weight * values[static_cast<std::size_t>(t) * head_dim + d];
  }
  for (int d = 0; d < head_dim; ++d) out[d] /= denominator;
  if (weights != nullptr) {
    for (double& w : scores) w /= denominator;
    *weights = std::move(scores);
  }
}

std::vector<double> reference_rows(const DecodeProblem& p, const std::vector<int>& requests,
                                   std::vector<std::vector<double>>* weights,
                                   QQuantization q_format = QQuantization::e4m3_ocp);

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
  return reference_rows(p, all, nullptr);
}

std::vector<double> reference_decode(const DecodeProblem& p, const std::vector<int>& requests) {
  return reference_rows(p, requests, nullptr);
}

std::vector<double> reference_decode(const DecodeProblem& p, const std::vector<int>& requests,
                                     std::vector<std::vector<double>>& weights) {
  return reference_rows(p, requests, &weights);
}

std::vector<double> reference_decode(const DecodeProblem& p, const std::vector<int>& requests, QQuantization q_format) {
  return reference_rows(p, requests, nullptr, q_format);
}

namespace {

std::vector<double> reference_rows(const DecodeProblem& p, const std::vector<int>& requests,
                                   std::vector<std::vector<double>>* weights, QQuantization q_format) {
  const OperatingPoint& op = p.op;
  const int D = op.head_dim, Hk = op.kv_heads, group_size = op.gqa_ratio();
  const bool k8 = !p.k8.empty(), v8 = !p.v8.empty(), per_head = p.k_scale.size() > 1;
  // MXFP8: element i of k8 (v8) has the E8M0 block scale k_mx_scales[i / 32] (v_mx_scales).
  const bool k_mx = !p.k_mx_scales.empty(), v_mx = !p.v_mx_scales.empty();
  const bool fp8_q = op.k_path == KPath::fp8_qk;
  const auto& e4m3 = e4m3_values();
  // A pre-RoPE cache stores unrotated keys: rotate each reconstructed key at its position.
  const bool rotate_keys = op.rope == RopeLayout::pre_rope;
  // A post-RoPE prebias cache holds the key less RoPE_t(b): the bias turns with position.
  const bool rotated_bias = !p.k_bias.empty() && op.rope == RopeLayout::post_rope;
  const RopeTable rope = rotate_keys || rotated_bias
                             ? RopeTable::build(*std::max_element(p.lengths.begin(), p.lengths.end()), D)
                             : RopeTable{};
  for (int b : requests) {
    if (b < 0 || b >= op.batch)
      throw std::out_of_range("reference_decode: request " + std::to_string(b) + " out of range");
  }
  std::vector<double> out(requests.size() * op.q_heads * D);
  if (weights != nullptr) weights->assign(requests.size() * op.q_heads, {});

  // One item = one (request, kv head): dequantize that head's keys/values once for its q heads.
  parallel_for(static_cast<std::int64_t>(requests.size()) * Hk, [&](std::int64_t item) {
    const std::size_t out_request = static_cast<std::size_t>(item / Hk);
    const int b = requests[out_request], h = static_cast<int>(item % Hk);
    const int len = p.lengths[b];
    const double k_scale = p.k_scale[per_head ? h : 0], v_scale = p.v_scale[per_head ? h : 0];
    std::vector<double> keys(static_cast<std::size_t>(len) * D), values(keys.size());
    std::vector<float> bias(D, 0.0f);
    for (int t = 0; t < len; ++t) {
      const std::int32_t page = p.page_table[static_cast<std::size_t>(b) * p.max_pages_per_seq + t / op.page_size];
      const std::size_t src = ((static_cast<std::size_t>(page) * op.page_size + t % op.page_size) * Hk + h) * D;
      if (!p.k_bias.empty()) {
        std::copy_n(&p.k_bias[static_cast<std::size_t>(h) * D], D, bias.data());
        if (rotated_bias) rope.rotate(bias.data(), t);
      }
      for (int d = 0; d < D; ++d) {
        const std::size_t i = src + d;
        double k = k_mx ? mxfp8_value(p.k8[i], p.k_mx_scales[i / kMxBlockSize])
                        : (k8 ? e4m3[p.k8[i]] * k_scale : bf16_to_float(p.k16[i]));
        k += bias[d];
        keys[static_cast<std::size_t>(t) * D + d] = k;
        values[static_cast<std::size_t>(t) * D + d] = v_mx ? mxfp8_value(p.v8[i], p.v_mx_scales[i / kMxBlockSize])
                                                           : (v8 ? e4m3[p.v8[i]] * v_scale : bf16_to_float(p.v16[i]));
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
        // S = q_scale * k_scale * (q8 . k8). An MXFP8 K is the block-scaled dot a Blackwell
        // block-scaled MMA computes, q_scale * sum_b 2^X_b * (q8_b . k8_b); each 2^X_b * k8
        // is exact in a double (mxfp8_value), so the dot of this Q with the dequantized
        // keys is the same sum, regrouped, and attend's loop serves both.
        if (q_format == QQuantization::e4m3_fnuz) {
          const double q_scale = quantize_q_row_e4m3_fnuz(&p.q[q_offset], D, q8.data());
          for (int d = 0; d < D; ++d) q[d] = static_cast<double>(e4m3_fnuz_to_float(q8[d])) * q_scale;
        } else {
          const double q_scale = quantize_q_row_e4m3(&p.q[q_offset], D, q8.data());
          for (int d = 0; d < D; ++d) q[d] = e4m3[q8[d]] * q_scale;
        }
      } else {
        for (int d = 0; d < D; ++d) q[d] = bf16_to_float(p.q[q_offset + d]);
      }
      attend(q, keys, values, len, D, p.softmax_scale, &out[out_offset],
             weights != nullptr ? &(*weights)[out_request * op.q_heads + qh] : nullptr);
    }
  });
  return out;
}

}  // namespace

OperatingPoint full_precision_op(const OperatingPoint& op) {
  OperatingPoint fp = op;
  fp.kv = KvDtype::k16v16;
  fp.k_path = KPath::k16;
  fp.mode = TransformMode::none;
  fp.k_repr = KRepr::plain;
  return fp;
}

DecodeProblem make_full_precision_problem(const OperatingPoint& op, std::uint64_t seed, KeyDistribution dist,
                                          const KeyModel* keys) {
  // The originals do not depend on the representation fields, so the BF16 cache of the
  // same seed holds exactly the values the representation quantized.
  return make_problem(full_precision_op(op), seed, dist, keys);
}

DecodeProblem make_full_precision_requests(const OperatingPoint& op, std::uint64_t seed, KeyDistribution dist,
                                           const std::vector<int>& requests, const KeyModel* keys) {
  op.validate();
  const detail::ProblemOriginals originals(op, seed, dist, keys);
  const int row = op.kv_heads * op.head_dim;
  DecodeProblem p;
  p.op = full_precision_op(op);
  p.op.batch = static_cast<int>(requests.size());
  p.op.context_lengths.clear();
  for (int b : requests) {
    if (b < 0 || b >= op.batch)
      throw std::out_of_range("make_full_precision_requests: request " + std::to_string(b) + " out of range");
    p.lengths.push_back(originals.lengths()[b]);
  }
  if (requests.empty()) return p;
  p.op.context = *std::max_element(p.lengths.begin(), p.lengths.end());
  if (std::any_of(p.lengths.begin(), p.lengths.end(), [&](int len) { return len != p.op.context; }))
    p.op.context_lengths.assign(p.lengths.begin(), p.lengths.end());
  p.softmax_scale = softmax_scale_for(op.head_dim);
  p.max_pages_per_seq = (p.op.context + op.page_size - 1) / op.page_size;
  p.num_pages = p.op.batch * p.max_pages_per_seq;
  p.page_table.resize(static_cast<std::size_t>(p.num_pages));
  for (int i = 0; i < p.num_pages; ++i) p.page_table[static_cast<std::size_t>(i)] = i;
  p.k_scale.assign(1, 1.0f);
  p.v_scale.assign(1, 1.0f);
  const std::size_t row_elems = static_cast<std::size_t>(op.q_heads) * op.head_dim;
  p.q.resize(requests.size() * row_elems);
  const std::size_t cache = static_cast<std::size_t>(p.num_pages) * op.page_size * row;
  p.k16.assign(cache, 0);
  p.v16.assign(cache, 0);
  parallel_for(static_cast<std::int64_t>(requests.size()), [&](std::int64_t i) {
    const int b = requests[static_cast<std::size_t>(i)];
    std::copy_n(&originals.q()[static_cast<std::size_t>(b) * row_elems], row_elems, &p.q[i * row_elems]);
    std::vector<float> key_rows, values;
    originals.keys(b, key_rows);
    originals.values(b, values);
    const std::size_t first = static_cast<std::size_t>(i) * p.max_pages_per_seq * op.page_size * row;
    for (std::size_t e = 0; e < key_rows.size(); ++e) {
      p.k16[first + e] = float_to_bf16(key_rows[e]);  // exact: the originals are BF16 values
      p.v16[first + e] = float_to_bf16(values[e]);
    }
  });
  return p;
}

std::vector<double> reference_decode_original(const OperatingPoint& op, std::uint64_t seed, KeyDistribution dist) {
  op.validate();
  const detail::ProblemOriginals originals(op, seed, dist);
  const int D = op.head_dim, Hk = op.kv_heads, group_size = op.gqa_ratio();
  // Same softmax scale as make_problem (a float), so only the cache representation differs.
  const double softmax_scale = softmax_scale_for(D);
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
