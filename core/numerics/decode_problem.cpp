// Random decode problems stored exactly as a kernel reads them: shuffled pages,
// BF16 or E4M3 K/V with per-tensor or per-head scales or MXFP8 block scales, optional
// exact pre-bias (the distribution's own key bias, as a model description gives it).
#include "core/numerics/decode_problem.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/numerics/fp8.h"
#include "core/numerics/fp8_inline.h"
#include "core/numerics/mxfp8.h"
#include "core/numerics/parallel_for.h"
#include "core/numerics/problem_originals.h"
#include "core/numerics/rope.h"

namespace tilepath::numerics {

namespace codec = inline_codec;  // inlined codecs for the per-element loops

namespace {

constexpr std::uint64_t kStreamPagePermutation = 3;

// Per-channel extremes of what one request's K cache quantizes (the key, less the
// bias as the layout sees it for prebias) and per-head |V| maxima. Reduced in request
// order so results never depend on threads.
struct RequestStats {
  std::vector<float> k_min, k_max;  // [kv_heads][head_dim]
  std::vector<float> v_amax;        // [kv_heads]
};

RequestStats request_stats(const OperatingPoint& op, const std::vector<float>& k_quantity,
                           const std::vector<float>& values) {
  const int row = op.kv_heads * op.head_dim;
  RequestStats s;
  s.k_min.assign(row, INFINITY);
  s.k_max.assign(row, -INFINITY);
  s.v_amax.assign(op.kv_heads, 0.0f);
  const std::size_t tokens = k_quantity.size() / row;
  for (std::size_t t = 0; t < tokens; ++t) {
    const float* k = &k_quantity[t * row];
    const float* v = &values[t * row];
    for (int i = 0; i < row; ++i) {
      s.k_min[i] = std::min(s.k_min[i], k[i]);
      s.k_max[i] = std::max(s.k_max[i], k[i]);
    }
    for (int h = 0; h < op.kv_heads; ++h) {
      float amax = s.v_amax[h];
      for (int d = 0; d < op.head_dim; ++d) amax = std::max(amax, std::fabs(v[h * op.head_dim + d]));
      s.v_amax[h] = amax;
    }
  }
  return s;
}

// The bias as token t of a post-RoPE cache holds it: RoPE_t(b), one row per kv head
// (the kernels rebuild it with the same float table). Pre-RoPE: b itself.
void bias_at(const OperatingPoint& op, const RopeTable& rope, const std::vector<float>& bias, int t, float* out) {
  std::copy(bias.begin(), bias.end(), out);
  if (op.rope != RopeLayout::post_rope) return;
  for (int h = 0; h < op.kv_heads; ++h) rope.rotate(out + static_cast<std::size_t>(h) * op.head_dim, t);
}

float scale_from_amax(float amax) { return amax > 0.0f ? amax / kE4M3Max : 1.0f; }

// MXFP8 needs no global amax: each token's head rows are quantized straight from their
// BF16 originals (the layout's key: unrotated for pre_rope, rotated for post_rope) with
// mxfp8_quantize, the gate's own codec; a BF16 V of k8v16 is stored as is. Padding
// slots stay element 0 with scale code 0. slot_offset(b, t): token t's first element.
template <class SlotOffset>
void store_mxfp8_pages(const detail::ProblemOriginals& originals, const SlotOffset& slot_offset, DecodeProblem& p) {
  const OperatingPoint& op = p.op;
  const bool v8 = v_is_fp8(op.kv);
  const int row = op.kv_heads * op.head_dim;
  const std::size_t cache_elems = static_cast<std::size_t>(p.num_pages) * p.k_page_elems();
  const std::size_t scale_count = cache_elems / kMxBlockSize;  // one E8M0 code per 32 elements, same slot order
  p.k8.assign(cache_elems, 0);
  p.k_mx_scales.assign(scale_count, 0);
  p.v8.assign(v8 ? cache_elems : 0, 0);
  p.v_mx_scales.assign(v8 ? scale_count : 0, 0);
  p.v16.assign(v8 ? 0 : cache_elems, 0);
  // One head row of head_dim floats into its slot's elements and block scales.
  auto store_row = [&](const float* x, std::size_t element, std::vector<std::uint8_t>& elements,
                       std::vector<std::uint8_t>& scales) {
    const Mxfp8Row q = mxfp8_quantize(x, op.head_dim);
    std::copy(q.elements.begin(), q.elements.end(), elements.begin() + static_cast<std::ptrdiff_t>(element));
    std::copy(q.scales.begin(), q.scales.end(), scales.begin() + static_cast<std::ptrdiff_t>(element / kMxBlockSize));
  };
  parallel_for(op.batch, [&](std::int64_t b) {
    std::vector<float> keys, values;
    originals.keys(static_cast<int>(b), keys);
    originals.values(static_cast<int>(b), values);
    for (int t = 0; t < p.lengths[b]; ++t) {
      const std::size_t dst = slot_offset(static_cast<int>(b), t), src = static_cast<std::size_t>(t) * row;
      for (int h = 0; h < op.kv_heads; ++h) {
        const std::size_t head = static_cast<std::size_t>(h) * op.head_dim;
        store_row(&keys[src + head], dst + head, p.k8, p.k_mx_scales);
        if (v8) store_row(&values[src + head], dst + head, p.v8, p.v_mx_scales);
      }
      if (!v8)
        for (int i = 0; i < row; ++i) p.v16[dst + i] = codec::float_to_bf16(values[src + i]);  // exact
    }
  });
}

}  // namespace

std::string_view to_string(KeyDistribution d) {
  switch (d) {
    case KeyDistribution::gaussian:
      return "gaussian";
    case KeyDistribution::heavy_tailed:
      return "heavy_tailed";
    case KeyDistribution::qwen_bias:
      return "qwen_bias";
  }
  return "?";
}

KeyDistribution parse_key_distribution(std::string_view s, std::string_view field) {
  for (auto d : {KeyDistribution::gaussian, KeyDistribution::heavy_tailed, KeyDistribution::qwen_bias}) {
    if (s == to_string(d)) return d;
  }
  throw ValidationError(std::string(field), "unknown key distribution '" + std::string(s) + "'",
                        "gaussian|heavy_tailed|qwen_bias");
}

std::size_t DecodeProblem::k_page_elems() const {
  return static_cast<std::size_t>(op.page_size) * op.kv_heads * op.head_dim;
}

float softmax_scale_for(int head_dim) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim))); }

DecodeProblem make_problem(const OperatingPoint& op, std::uint64_t seed, KeyDistribution dist,
                           const KeyModel* key_model) {
  op.validate();
  const detail::ProblemOriginals originals(op, seed, dist, key_model);
  DecodeProblem p;
  p.op = op;
  p.softmax_scale = softmax_scale_for(op.head_dim);
  p.q = originals.q();
  p.lengths.assign(originals.lengths().begin(), originals.lengths().end());

  // ---- pages: every request gets ceil(len/P) pages drawn from a shuffled pool ----
  std::vector<int> pages_of(op.batch);
  for (int b = 0; b < op.batch; ++b) pages_of[b] = (p.lengths[b] + op.page_size - 1) / op.page_size;
  p.max_pages_per_seq = *std::max_element(pages_of.begin(), pages_of.end());
  p.num_pages = std::accumulate(pages_of.begin(), pages_of.end(), 0);
  std::vector<std::int32_t> pool(p.num_pages);
  std::iota(pool.begin(), pool.end(), 0);
  std::mt19937_64 page_rng(detail::stream_seed(seed, kStreamPagePermutation));
  std::shuffle(pool.begin(), pool.end(), page_rng);
  p.page_table.assign(static_cast<std::size_t>(op.batch) * p.max_pages_per_seq, 0);
  for (int b = 0, next = 0; b < op.batch; ++b) {
    for (int i = 0; i < pages_of[b]; ++i)
      p.page_table[static_cast<std::size_t>(b) * p.max_pages_per_seq + i] = pool[next++];
  }

  const bool k8 = k_is_fp8(op.kv), v8 = v_is_fp8(op.kv);
  const bool per_head = op.scale == ScaleGranularity::per_head;
  const bool prebias = op.k_repr == KRepr::prebias && k8;
  // MXFP8: every FP8 tensor gets one E8M0 scale per 32-element block of each token's head
  // row; k_scale/v_scale stay 1.0 (unused).
  const bool mx = op.k_repr == KRepr::mxfp8 && k8;
  if (mx && op.head_dim % kMxBlockSize != 0) {
    throw ValidationError("head_dim",
                          "k_repr mxfp8 needs a head dim that is a multiple of " + std::to_string(kMxBlockSize) +
                              " (one E8M0 scale per 32-element block), not " + std::to_string(op.head_dim),
                          "a multiple of 32 (64|128|256)");
  }
  const int row = op.kv_heads * op.head_dim;
  const int scale_groups = per_head ? op.kv_heads : 1;
  p.k_scale.assign(scale_groups, 1.0f);
  p.v_scale.assign(scale_groups, 1.0f);
  // Prebias: the distribution's per-channel key bias, exact in F32, as a model
  // description gives it (never the cache's own mean, which a server cannot know ahead).
  const std::vector<float> bias = prebias ? originals.key_bias() : std::vector<float>(row, 0.0f);
  if (prebias) p.k_bias = bias;
  // What the K cache quantizes for token t: the key, less the bias as its layout sees it.
  // Pass 1 and pass 2 both call it: the same float arithmetic keeps each residual within its scale.
  auto k_quantity = [&](const float* key, int t, float* bias_row, float* out) {
    if (!prebias) {
      std::copy_n(key, row, out);
      return;
    }
    bias_at(op, originals.rope(), bias, t, bias_row);
    for (int i = 0; i < row; ++i) out[i] = key[i] - bias_row[i];
  };

  const std::size_t cache_elems = static_cast<std::size_t>(p.num_pages) * p.k_page_elems();
  auto slot_offset = [&](int b, int t) {
    const std::int32_t page = p.page_table[static_cast<std::size_t>(b) * p.max_pages_per_seq + t / op.page_size];
    return (static_cast<std::size_t>(page) * op.page_size + t % op.page_size) * row;
  };
  if (mx) {
    store_mxfp8_pages(originals, slot_offset, p);
    return p;
  }

  // ---- pass 1: generate each request once. BF16 tensors go straight into their pages;
  // FP8-bound ones wait as BF16 (same layout) until the scales are known. ----
  std::vector<std::uint16_t> k_pending(k8 ? cache_elems : 0), v_pending(v8 ? cache_elems : 0);
  p.k16.assign(k8 ? 0 : cache_elems, 0);
  p.v16.assign(v8 ? 0 : cache_elems, 0);
  std::uint16_t* k_dst = k8 ? k_pending.data() : p.k16.data();
  std::uint16_t* v_dst = v8 ? v_pending.data() : p.v16.data();
  std::vector<RequestStats> stats(op.batch);
  parallel_for(op.batch, [&](std::int64_t b) {
    std::vector<float> keys, values;
    originals.keys(static_cast<int>(b), keys);
    originals.values(static_cast<int>(b), values);
    if (k8 || v8) {
      std::vector<float> quantity(keys.size()), bias_row(row);
      for (int t = 0; t < p.lengths[b]; ++t)
        k_quantity(&keys[static_cast<std::size_t>(t) * row], t, bias_row.data(),
                   &quantity[static_cast<std::size_t>(t) * row]);
      stats[b] = request_stats(op, quantity, values);
    }
    for (int t = 0; t < p.lengths[b]; ++t) {
      const std::size_t dst = slot_offset(static_cast<int>(b), t), src = static_cast<std::size_t>(t) * row;
      for (int i = 0; i < row; ++i) {
        k_dst[dst + i] = codec::float_to_bf16(keys[src + i]);  // exact: originals are BF16 values
        v_dst[dst + i] = codec::float_to_bf16(values[src + i]);
      }
    }
  });
  if (!k8 && !v8) return p;

  // ---- scales from amax (reduced in request order) ----
  std::vector<float> k_min(row, INFINITY), k_max(row, -INFINITY), v_amax(op.kv_heads, 0.0f);
  for (const auto& s : stats) {
    for (int i = 0; i < row; ++i) {
      k_min[i] = std::min(k_min[i], s.k_min[i]);
      k_max[i] = std::max(k_max[i], s.k_max[i]);
    }
    for (int h = 0; h < op.kv_heads; ++h) v_amax[h] = std::max(v_amax[h], s.v_amax[h]);
  }
  std::vector<float> k_amax(op.kv_heads, 0.0f);
  for (int i = 0; i < row; ++i)
    k_amax[i / op.head_dim] = std::max({k_amax[i / op.head_dim], std::fabs(k_max[i]), std::fabs(k_min[i])});
  if (!per_head) {
    k_amax.assign(1, *std::max_element(k_amax.begin(), k_amax.end()));
    v_amax.assign(1, *std::max_element(v_amax.begin(), v_amax.end()));
  }
  if (k8) std::transform(k_amax.begin(), k_amax.end(), p.k_scale.begin(), scale_from_amax);
  if (v8) std::transform(v_amax.begin(), v_amax.end(), p.v_scale.begin(), scale_from_amax);

  // ---- pass 2: quantize the pending tensors in place of their pages (padding slots stay 0) ----
  p.k8.assign(k8 ? cache_elems : 0, 0);
  p.v8.assign(v8 ? cache_elems : 0, 0);
  parallel_for(op.batch, [&](std::int64_t b) {
    std::vector<float> key(row), quantity(row), bias_row(row);
    for (int t = 0; t < p.lengths[b]; ++t) {
      const std::size_t offset = slot_offset(static_cast<int>(b), t);
      if (k8) {
        for (int i = 0; i < row; ++i) key[i] = codec::bf16_to_float(k_pending[offset + i]);
        k_quantity(key.data(), t, bias_row.data(), quantity.data());
      }
      for (int h = 0; h < op.kv_heads; ++h) {
        const int group = per_head ? h : 0;
        const float k_scale = p.k_scale[group], v_scale = p.v_scale[group];
        for (int i = h * op.head_dim; i < (h + 1) * op.head_dim; ++i) {
          if (k8) p.k8[offset + i] = codec::float_to_e4m3(quantity[i] / k_scale);
          if (v8) p.v8[offset + i] = codec::float_to_e4m3(codec::bf16_to_float(v_pending[offset + i]) / v_scale);
        }
      }
    }
  });
  return p;
}

}  // namespace tilepath::numerics
