#include "core/quality/gate.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/numerics/decode_problem.h"
#include "core/numerics/fp8.h"
#include "core/numerics/mxfp8.h"
#include "core/numerics/parallel_for.h"
#include "core/numerics/problem_originals.h"

namespace tilepath::quality {
namespace {

using numerics::GateMetrics;
using numerics::GateRowBuilder;

// The P operand of k_only's FP8 PV: e4m3(p * 448), as the kernels scale it.
constexpr double kPScale = numerics::kE4M3Max;
constexpr std::uint64_t kStreamStepQueries = 1ull << 50;

double bf16(double x) { return numerics::round_bf16(static_cast<float>(x)); }
double e4m3(double x) { return numerics::e4m3_to_float(numerics::float_to_e4m3(static_cast<float>(x))); }

// Where the rows come from: the synthetic generator or an imported dump.
class RowSource {
 public:
  virtual ~RowSource() = default;
  virtual GateRow row(int request, int kv_head, int tokens) const = 0;
  // Fresh queries for an autoregressive step, [group][head_dim], BF16-representable.
  std::vector<double> step_queries(int request, int kv_head, int step, int group, int head_dim) const {
    std::mt19937_64 rng(numerics::detail::stream_seed(
        seed, kStreamStepQueries + (static_cast<std::uint64_t>(request) << 20) +
                  (static_cast<std::uint64_t>(kv_head) << 12) + static_cast<std::uint64_t>(step)));
    std::vector<double> q(static_cast<std::size_t>(group) * head_dim);
    for (double& x : q) x = bf16(numerics::detail::standard_normal_from_bits(static_cast<std::uint32_t>(rng())));
    return q;
  }
  std::uint64_t seed = 1;
};

class SyntheticRows final : public RowSource {
 public:
  SyntheticRows(const KeyModel& model, const OperatingPoint& op, std::uint64_t s) : generator_(model, op, s) {
    seed = s;
  }
  GateRow row(int request, int kv_head, int tokens) const override { return generator_.row(request, kv_head, tokens); }

 private:
  KeyGenerator generator_;
};

// The dump holds post-RoPE keys (what a cache stores): the unrotated key is the
// inverse rotation at the token's position, exact in float64.
class ImportedRows final : public RowSource {
 public:
  ImportedRows(const ImportedKv& dump, const OperatingPoint& op, std::uint64_t s) : dump_(dump), op_(op) { seed = s; }
  GateRow row(int request, int kv_head, int tokens) const override {
    GateRow r;
    r.request = request;
    r.kv_head = kv_head;
    r.tokens = tokens;
    r.head_dim = op_.head_dim;
    r.rotary_dim = op_.head_dim;
    const int D = op_.head_dim;
    r.k_pre.resize(static_cast<std::size_t>(tokens) * D);
    r.v.resize(r.k_pre.size());
    r.bias.assign(D, 0.0);
    if (dump_.bias)
      for (int d = 0; d < D; ++d) r.bias[d] = dump_.bias->at(std::min(dump_.layer, dump_.bias->layers - 1), kv_head, d);
    std::mt19937_64 rng(numerics::detail::stream_seed(seed, 77 + kv_head));
    for (int t = 0; t < tokens; ++t) {
      double* k = &r.k_pre[static_cast<std::size_t>(t) * D];
      for (int d = 0; d < D; ++d) k[d] = dump_.keys.at(dump_.layer, t, kv_head, d);
      rotate_back(k, D, t);
      for (int d = 0; d < D; ++d)
        r.v[static_cast<std::size_t>(t) * D + d] =
            dump_.values ? dump_.values->at(dump_.layer, t, kv_head, d)
                         : bf16(numerics::detail::standard_normal_from_bits(static_cast<std::uint32_t>(rng())));
    }
    r.q = step_queries(request, kv_head, -1, op_.gqa_ratio(), D);
    return r;
  }

 private:
  static void rotate_back(double* row, int rotary_dim, int position) {
    const int half = rotary_dim / 2;
    for (int i = 0; i < half; ++i) {
      const double angle = -position * std::pow(10000.0, -2.0 * i / rotary_dim);
      const double c = std::cos(angle), s = std::sin(angle);
      const double x = row[i], y = row[i + half];
      row[i] = x * c - y * s;
      row[i + half] = x * s + y * c;
    }
  }
  const ImportedKv& dump_;
  OperatingPoint op_;
};

// The model's key at position t: the rotated key in BF16, as a post-RoPE cache holds it.
void true_key(const GateRow& r, int t, double* out) {
  const int D = r.head_dim;
  std::copy_n(&r.k_pre[static_cast<std::size_t>(t) * D], D, out);
  rotate(out, r.rotary_dim, t);
  for (int d = 0; d < D; ++d) out[d] = bf16(out[d]);
}

// The bias as the cache's layout sees it at position t: rotated for post-RoPE.
void bias_at(const GateRow& r, int t, const OperatingPoint& op, double* out) {
  std::copy(r.bias.begin(), r.bias.end(), out);
  if (op.rope == RopeLayout::post_rope) rotate(out, r.rotary_dim, t);
}

// What the cache quantizes for token t (before FP8): the stored key, less the exact bias
// for prebias. Post-RoPE stores the rotated key, pre-RoPE the unrotated one.
void key_quantity(const GateRow& r, int t, const OperatingPoint& op, double* out) {
  const int D = r.head_dim;
  if (op.rope == RopeLayout::post_rope)
    true_key(r, t, out);
  else
    std::copy_n(&r.k_pre[static_cast<std::size_t>(t) * D], D, out);
  if (op.k_repr == KRepr::prebias) {
    std::vector<double> b(D);
    bias_at(r, t, op, b.data());
    for (int d = 0; d < D; ++d) out[d] -= b[d];
  }
}

// amax of the quantities the FP8 scales are taken from, per kv head, over the first n
// tokens of every request, for each n (running maxima): [kv_heads][tokens].
struct ScaleTables {
  std::vector<std::vector<double>> k, v;
};

ScaleTables running_amax(const RowSource& rows, const OperatingPoint& op, int tokens) {
  const int B = op.batch, Hk = op.kv_heads, D = op.head_dim;
  ScaleTables t;
  t.k.assign(Hk, std::vector<double>(tokens, 0.0));
  t.v = t.k;
  std::vector<std::vector<double>> k_rows(B * Hk), v_rows(B * Hk);
  numerics::parallel_for(B * Hk, [&](std::int64_t item) {
    const GateRow r = rows.row(static_cast<int>(item / Hk), static_cast<int>(item % Hk), tokens);
    std::vector<double> x(D), km(tokens), vm(tokens);
    double k_run = 0, v_run = 0;
    for (int n = 0; n < tokens; ++n) {
      key_quantity(r, n, op, x.data());
      for (int d = 0; d < D; ++d) {
        k_run = std::max(k_run, std::fabs(x[d]));
        v_run = std::max(v_run, std::fabs(r.v[static_cast<std::size_t>(n) * D + d]));
      }
      km[n] = k_run;
      vm[n] = v_run;
    }
    k_rows[item] = std::move(km);
    v_rows[item] = std::move(vm);
  });
  for (std::int64_t item = 0; item < B * Hk; ++item) {
    const int h = static_cast<int>(item % Hk);
    for (int n = 0; n < tokens; ++n) {
      t.k[h][n] = std::max(t.k[h][n], k_rows[item][n]);
      t.v[h][n] = std::max(t.v[h][n], v_rows[item][n]);
    }
  }
  if (op.scale == ScaleGranularity::per_tensor) {
    for (int n = 0; n < tokens; ++n) {
      double km = 0, vm = 0;
      for (int h = 0; h < Hk; ++h) km = std::max(km, t.k[h][n]), vm = std::max(vm, t.v[h][n]);
      for (int h = 0; h < Hk; ++h) t.k[h][n] = km, t.v[h][n] = vm;
    }
  }
  return t;
}

double scale_of(double amax) { return amax > 0 ? amax / numerics::kE4M3Max : 1.0; }

// x quantized and dequantized as the representation stores it.
void quantize_row(double* x, int D, bool fp8, KRepr repr, double scale) {
  if (!fp8) return;  // BF16: stored exactly
  if (repr == KRepr::mxfp8) {
    std::vector<float> f(x, x + D), back(D);
    numerics::mxfp8_dequantize(numerics::mxfp8_quantize(f.data(), D), back.data());
    std::copy(back.begin(), back.end(), x);
    return;
  }
  for (int d = 0; d < D; ++d) x[d] = e4m3(x[d] / scale) * scale;
}

// The reconstructed keys and values of a row's first n tokens.
void represent(const GateRow& r, int n, const OperatingPoint& op, double k_scale, double v_scale,
               std::vector<double>& keys, std::vector<double>& values) {
  const int D = r.head_dim;
  keys.resize(static_cast<std::size_t>(n) * D);
  values.resize(keys.size());
  std::vector<double> b(D);
  for (int t = 0; t < n; ++t) {
    double* k = &keys[static_cast<std::size_t>(t) * D];
    if (!k_is_fp8(op.kv)) {
      true_key(r, t, k);  // K16: the cache holds the model's key
    } else {
      key_quantity(r, t, op, k);
      quantize_row(k, D, true, op.k_repr, k_scale);
      if (op.k_repr == KRepr::prebias) {
        bias_at(r, t, op, b.data());  // restored exactly (rotated for post-RoPE)
        for (int d = 0; d < D; ++d) k[d] += b[d];
      }
      if (op.rope == RopeLayout::pre_rope) rotate(k, r.rotary_dim, t);  // the tile rotates pre-RoPE keys
    }
    double* v = &values[static_cast<std::size_t>(t) * D];
    std::copy_n(&r.v[static_cast<std::size_t>(t) * D], D, v);
    quantize_row(v, D, v_is_fp8(op.kv), op.k_repr == KRepr::mxfp8 ? KRepr::mxfp8 : KRepr::plain, v_scale);
  }
}

// Attention of one query over n rows of keys and values: the weights, and the output.
void attend(const double* q, const std::vector<double>& keys, const std::vector<double>& values, int n, int D,
            double softmax_scale, bool quantize_p, double* weights, double* out) {
  double max_score = -INFINITY;
  for (int t = 0; t < n; ++t) {
    double s = 0;
    for (int d = 0; d < D; ++d) s += q[d] * keys[static_cast<std::size_t>(t) * D + d];
    weights[t] = s * softmax_scale;
    max_score = std::max(max_score, weights[t]);
  }
  double sum = 0;
  for (int d = 0; d < D; ++d) out[d] = 0;
  for (int t = 0; t < n; ++t) {
    const double p = std::exp(weights[t] - max_score);
    sum += p;
    weights[t] = p;
    // k_only's PV multiplies E4M3 P (scaled by 448) with E4M3 V; the sum stays exact.
    const double pv = quantize_p ? e4m3(p * kPScale) / kPScale : p;
    for (int d = 0; d < D; ++d) out[d] += pv * values[static_cast<std::size_t>(t) * D + d];
  }
  for (int t = 0; t < n; ++t) weights[t] /= sum;
  for (int d = 0; d < D; ++d) out[d] /= sum;
}

// The query the path feeds the MMA: BF16 as given, or E4M3 with a per-row scale (fp8_qk).
std::vector<double> path_query(const double* q, int D, const OperatingPoint& op) {
  std::vector<double> out(q, q + D);
  if (op.k_path != KPath::fp8_qk) return out;
  std::vector<std::uint16_t> bits(D);
  std::vector<std::uint8_t> q8(D);
  for (int d = 0; d < D; ++d) bits[d] = numerics::float_to_bf16(static_cast<float>(q[d]));
  const double scale = numerics::quantize_q_row_e4m3(bits.data(), D, q8.data());
  for (int d = 0; d < D; ++d) out[d] = numerics::e4m3_to_float(q8[d]) * scale;
  return out;
}

GateMetrics evaluate_step(const RowSource& rows, const OperatingPoint& op, const ScaleTables& scales, int n,
                          int scale_tokens, int step) {
  const int B = op.batch, Hk = op.kv_heads, D = op.head_dim, G = op.gqa_ratio();
  const double softmax_scale = numerics::softmax_scale_for(D);
  GateMetrics m;
  m.rows.resize(static_cast<std::size_t>(B) * Hk);
  m.rows_total = B * Hk;
  numerics::parallel_for(B * Hk, [&](std::int64_t item) {
    const int b = static_cast<int>(item / Hk), h = static_cast<int>(item % Hk);
    const GateRow r = rows.row(b, h, n);
    const double k_scale = scale_of(scales.k[h][scale_tokens - 1]), v_scale = scale_of(scales.v[h][scale_tokens - 1]);
    std::vector<double> rep_keys, rep_values, ref_keys(static_cast<std::size_t>(n) * D);
    represent(r, n, op, k_scale, v_scale, rep_keys, rep_values);
    for (int t = 0; t < n; ++t) true_key(r, t, &ref_keys[static_cast<std::size_t>(t) * D]);
    const std::vector<double> q = step < 0 ? r.q : rows.step_queries(b, h, step, G, D);
    GateRowBuilder builder(b, h, D, n);
    std::vector<double> w_ref(n), w(n), o_ref(D), o(D);
    for (int g = 0; g < G; ++g) {
      const double* qg = &q[static_cast<std::size_t>(g) * D];
      attend(qg, ref_keys, r.v, n, D, softmax_scale, false, w_ref.data(), o_ref.data());
      const std::vector<double> qp = path_query(qg, D, op);
      attend(qp.data(), rep_keys, rep_values, n, D, softmax_scale, op.mode == TransformMode::k_only, w.data(),
             o.data());
      for (double& x : o) x = bf16(x);  // the kernels store BF16
      builder.add_q_head(o_ref.data(), o.data(), w_ref.data(), w.data());
    }
    m.rows[item] = builder.finish();
  });
  m.summarise();
  return m;
}

GateResult run(const RowSource& rows, const GateSettings& s, const std::string& distribution) {
  const OperatingPoint& op = s.op;
  op.validate();
  if (!op.context_lengths.empty())
    throw std::invalid_argument("gate: ragged batches are not supported; give --context");
  if (s.steps < 0) throw std::invalid_argument("gate: steps must be >= 0");
  GateResult result;
  result.distribution = distribution;
  result.representation = representation_label(op);
  result.settings = s;
  const int total = op.context + s.steps;
  const ScaleTables scales = running_amax(rows, op, total);
  if (s.steps == 0) {
    GateStep step{0, op.context, evaluate_step(rows, op, scales, op.context, op.context, -1), {}};
    step.verdict = numerics::judge(step.metrics, s.thresholds);
    result.steps.push_back(std::move(step));
  } else {
    for (int i = 0; i < s.steps; ++i) {
      const int n = op.context + i + 1;
      GateStep step{i + 1, n, evaluate_step(rows, op, scales, n, s.scales_from_prefix ? op.context : n, i), {}};
      step.verdict = numerics::judge(step.metrics, s.thresholds);
      result.steps.push_back(std::move(step));
    }
  }
  // The result is the worst step's; it passes when every step does.
  const GateStep* worst = &result.steps.front();
  for (const GateStep& st : result.steps)
    if (st.metrics.rel_l2.worst > worst->metrics.rel_l2.worst || (!st.verdict.passed && worst->verdict.passed))
      worst = &st;
  result.metrics = worst->metrics;
  result.verdict.passed = true;
  for (const GateStep& st : result.steps)
    if (!st.verdict.passed) {
      result.verdict.passed = false;
      for (const std::string& f : st.verdict.failures)
        result.verdict.failures.push_back((s.steps > 0 ? "step " + std::to_string(st.step) + ": " : "") + f);
    }
  return result;
}

}  // namespace

std::string representation_label(const OperatingPoint& op) {
  return std::string(to_string(op.kv)) + "/" + std::string(to_string(op.k_path)) + "/" +
         std::string(to_string(op.mode)) + "/" + std::string(to_string(op.k_repr)) + "/" +
         std::string(to_string(op.rope)) + "/" + std::string(to_string(op.scale));
}

GateResult evaluate_gate(const KeyModel& keys, const GateSettings& settings) {
  const SyntheticRows rows(keys, settings.op, settings.seed);
  return run(rows, settings, keys.id);
}

GateResult evaluate_gate(const ImportedKv& dump, const GateSettings& settings) {
  GateSettings s = settings;
  const int group = s.op.gqa_ratio();
  s.op.batch = 1;
  s.op.kv_heads = dump.keys.kv_heads;
  s.op.q_heads = group * dump.keys.kv_heads;
  s.op.head_dim = dump.keys.head_dim;
  s.op.context = dump.keys.tokens - s.steps;
  if (s.op.context < 1)
    throw std::invalid_argument(dump.file + ": " + std::to_string(dump.keys.tokens) + " tokens leave none for " +
                                std::to_string(s.steps) + " steps");
  if (dump.values && (dump.values->tokens != dump.keys.tokens || dump.values->kv_heads != dump.keys.kv_heads ||
                      dump.values->head_dim != dump.keys.head_dim))
    throw std::invalid_argument(dump.file + ": the values' shape differs from the keys'");
  if (dump.bias && (dump.bias->kv_heads != dump.keys.kv_heads || dump.bias->head_dim != dump.keys.head_dim))
    throw std::invalid_argument(dump.bias_file + ": the bias is [" + std::to_string(dump.bias->kv_heads) + ", " +
                                std::to_string(dump.bias->head_dim) + "], the keys have " +
                                std::to_string(dump.keys.kv_heads) + " kv heads of " +
                                std::to_string(dump.keys.head_dim));
  const ImportedRows rows(dump, s.op, s.seed);
  return run(rows, s, "npy:" + dump.file);
}

nlohmann::json GateResult::to_json() const {
  nlohmann::json steps_json = nlohmann::json::array();
  for (const GateStep& st : steps)
    steps_json.push_back(
        {{"step", st.step}, {"tokens", st.tokens}, {"passed", st.verdict.passed}, {"metrics", st.metrics.to_json()}});
  return {{"distribution", distribution},
          {"representation", representation},
          {"operating_point", tilepath::to_json(settings.op)},
          {"seed", settings.seed},
          {"steps_run", settings.steps},
          {"scales", settings.steps == 0           ? "over the context"
                     : settings.scales_from_prefix ? "fixed from the first " + std::to_string(settings.op.context) +
                                                         " tokens (calibration prefix)"
                                                   : "recomputed over every token at each step"},
          {"passed", verdict.passed},
          {"failures", verdict.failures},
          {"thresholds", settings.thresholds.to_json()},
          {"metrics", metrics.to_json()},
          {"steps", steps_json}};
}

}  // namespace tilepath::quality
