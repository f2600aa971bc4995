#include "core/numerics/gate_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace tilepath::numerics {
namespace {

nlohmann::json number_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

std::vector<int> top_indices(const double* w, int n, int k) {
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int a, int b) { return w[a] > w[b] || (w[a] == w[b] && a < b); });
  order.resize(k);
  std::sort(order.begin(), order.end());
  return order;
}

GateSummary summary(std::vector<double> values, bool smaller_is_worse) {
  GateSummary s;
  if (values.empty()) return s;
  // A NaN row (a non-finite output) is the worst possible.
  for (double& v : values)
    if (std::isnan(v)) v = smaller_is_worse ? -INFINITY : INFINITY;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  s.median = n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
  s.worst = smaller_is_worse ? values.front() : values.back();
  return s;
}

std::string format(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

double top_k_agreement(const double* w_ref, const double* w, int tokens, int k) {
  k = std::min(k, tokens);
  if (k <= 0) return 1.0;
  const std::vector<int> a = top_indices(w_ref, tokens, k), b = top_indices(w, tokens, k);
  std::vector<int> common;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(common));
  return double(common.size()) / k;
}

double kl_divergence(const double* p, const double* q, int n) {
  double kl = 0;
  for (int i = 0; i < n; ++i)
    if (p[i] > 0) kl += p[i] * std::log(p[i] / std::max(q[i], 1e-300));
  return std::max(0.0, kl);  // rounding can make an exact match a hair below zero
}

GateRowBuilder::GateRowBuilder(int request, int kv_head, int head_dim, int tokens)
    : head_dim_(head_dim), tokens_(tokens) {
  m_.request = request;
  m_.kv_head = kv_head;
}

void GateRowBuilder::add_weights(const double* w_ref, const double* w) {
  m_.kl = std::max(m_.kl, kl_divergence(w_ref, w, tokens_));
  m_.top8 = std::min(m_.top8, top_k_agreement(w_ref, w, tokens_, 8));
  m_.top32 = std::min(m_.top32, top_k_agreement(w_ref, w, tokens_, 32));
}

void GateRowBuilder::add_q_head(const double* out_ref, const double* out, const double* w_ref, const double* w) {
  for (int d = 0; d < head_dim_; ++d) {
    const double diff = out[d] - out_ref[d];
    diff_sq_ += diff * diff;
    ref_sq_ += out_ref[d] * out_ref[d];
    m_.max_abs = std::max(m_.max_abs, std::isfinite(diff) ? std::fabs(diff) : INFINITY);
  }
  add_weights(w_ref, w);
}

void GateRowBuilder::add_q_head(const double* out_ref, const float* out, const double* w_ref, const double* w) {
  std::vector<double> wide(out, out + head_dim_);
  add_q_head(out_ref, wide.data(), w_ref, w);
}

GateRowMetrics GateRowBuilder::finish() const {
  GateRowMetrics m = m_;
  m.rel_l2 = ref_sq_ > 0 ? std::sqrt(diff_sq_ / ref_sq_) : std::sqrt(diff_sq_);
  if (!std::isfinite(diff_sq_)) m.rel_l2 = INFINITY;
  return m;
}

void GateMetrics::summarise() {
  std::vector<double> l2, abs, kls, t8, t32;
  for (const GateRowMetrics& r : rows) {
    l2.push_back(r.rel_l2);
    abs.push_back(r.max_abs);
    kls.push_back(r.kl);
    t8.push_back(r.top8);
    t32.push_back(r.top32);
  }
  rel_l2 = summary(l2, false);
  max_abs = summary(abs, false);
  kl = summary(kls, false);
  top8 = summary(t8, true);
  top32 = summary(t32, true);
}

nlohmann::json GateMetrics::to_json() const {
  auto s = [](const GateSummary& x) {
    return nlohmann::json{{"worst", number_or_null(x.worst)}, {"median", number_or_null(x.median)}};
  };
  return {{"rows_checked", rows.size()},
          {"rows_total", rows_total},
          {"rel_l2", s(rel_l2)},
          {"max_abs", s(max_abs)},
          {"kl", s(kl)},
          {"top8", s(top8)},
          {"top32", s(top32)}};
}

GateVerdict judge(const GateMetrics& m, const GateThresholds& t) {
  GateVerdict v;
  auto at_most = [&](const char* name, const GateSummary& s, double limit) {
    if (std::isnan(limit)) return;
    if (!(s.worst <= limit)) {
      v.passed = false;
      v.failures.push_back(std::string(name) + " " + format(s.worst) + " > " + format(limit));
    }
  };
  auto at_least = [&](const char* name, const GateSummary& s, double limit) {
    if (std::isnan(limit)) return;
    if (!(s.worst >= limit)) {
      v.passed = false;
      v.failures.push_back(std::string(name) + " " + format(s.worst) + " < " + format(limit));
    }
  };
  if (m.rows.empty()) {
    v.passed = false;
    v.failures.push_back("no rows checked");
    return v;
  }
  at_most("rel_l2", m.rel_l2, t.rel_l2);
  at_most("max_abs", m.max_abs, t.max_abs);
  at_most("kl", m.kl, t.kl);
  at_least("top8", m.top8, t.top8);
  at_least("top32", m.top32, t.top32);
  return v;
}

nlohmann::json GateThresholds::to_json() const {
  return {{"rel_l2", number_or_null(rel_l2)},
          {"max_abs", number_or_null(max_abs)},
          {"kl", number_or_null(kl)},
          {"top8", number_or_null(top8)},
          {"top32", number_or_null(top32)}};
}

GateThresholds GateThresholds::from_json(const nlohmann::json& j, GateThresholds t) {
  if (!j.is_object()) throw std::invalid_argument("gate thresholds: expected an object of metric -> number");
  for (const auto& [key, value] : j.items()) {
    double* slot = key == "rel_l2"    ? &t.rel_l2
                   : key == "max_abs" ? &t.max_abs
                   : key == "kl"      ? &t.kl
                   : key == "top8"    ? &t.top8
                   : key == "top32"   ? &t.top32
                                      : nullptr;
    if (slot == nullptr)
      throw std::invalid_argument("gate thresholds: unknown metric '" + key +
                                  "'; allowed: rel_l2|max_abs|kl|top8|top32");
    if (value.is_null()) {
      *slot = NAN;  // not gated
    } else if (value.is_number()) {
      *slot = value.get<double>();
    } else {
      throw std::invalid_argument("gate thresholds: " + key + " must be a number or null, got " + value.dump());
    }
  }
  return t;
}

}  // namespace tilepath::numerics
