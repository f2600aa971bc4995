#include "core/perf/cuda_model_fit.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <nlohmann/json.hpp>

#include "core/perf/model_file.h"
#include "core/quantile.h"

namespace tilepath::perf {

bool HeldOutShapes::holds_out(const OperatingPoint& op) const {
  for (const Match& m : entries) {
    const bool match = (!m.batch || *m.batch == op.batch) && (!m.context || *m.context == op.max_context()) &&
                       (!m.head_dim || *m.head_dim == op.head_dim) && (!m.kv || *m.kv == to_string(op.kv));
    if (match) return true;
  }
  return false;
}

HeldOutShapes load_held_out_shapes(const std::string& path) {
  const nlohmann::json j = read_model_json(path, "held-out shapes");
  if (!j.is_object() || !j.contains("held_out") || !j["held_out"].is_array())
    fail_field(path, "held_out", "missing (an array of {batch, context, head_dim, kv} matches)");
  HeldOutShapes out;
  out.file = path;
  for (const nlohmann::json& e : j["held_out"]) {
    if (!e.is_object() || e.empty()) fail_field(path, "held_out[]", "each entry is a non-empty object");
    HeldOutShapes::Match m;
    for (const auto& [key, value] : e.items()) {
      const bool known = key == "batch" || key == "context" || key == "head_dim" || key == "kv";
      if (!known) fail_field(path, "held_out[]." + key, "unknown; allowed: batch, context, head_dim, kv");
      if (key == "kv" ? !value.is_string() : !value.is_number_integer())
        fail_field(path, "held_out[]." + key, key == "kv" ? "must be a string" : "must be an integer");
      if (key == "kv") m.kv = value.get<std::string>();
      if (key == "batch") m.batch = value.get<int>();
      if (key == "context") m.context = value.get<int>();
      if (key == "head_dim") m.head_dim = value.get<int>();
    }
    out.entries.push_back(m);
  }
  return out;
}

namespace {

std::vector<double> relative_errors(const std::vector<MeasuredLatency>& cases, const GpuModel& gpu,
                                    const CudaKernelFit& fit) {
  std::vector<double> e;
  e.reserve(cases.size());
  for (const MeasuredLatency& c : cases)
    e.push_back(std::abs(estimate_cuda_latency(c.op, gpu, fit).latency_us - c.latency_us) / c.latency_us);
  return e;
}

}  // namespace

LatencyErrors latency_errors(const std::vector<MeasuredLatency>& cases, const GpuModel& gpu, const CudaKernelFit& fit) {
  LatencyErrors out;
  out.cases = static_cast<int>(cases.size());
  if (cases.empty()) return out;
  const std::vector<double> e = relative_errors(cases, gpu, fit);
  out.median = quantile(e, 0.5);
  out.p90 = quantile(e, 0.9);
  out.worst = *std::max_element(e.begin(), e.end());
  return out;
}

CudaKernelFit fit_cuda_kernel(const std::vector<MeasuredLatency>& train, const GpuModel& gpu,
                              const CudaKernelFit& start, int iterations) {
  CudaKernelFit work = start;
  const auto loss = [&](const std::vector<double>& x) {
    if (*std::min_element(x.begin(), x.end()) < 0 || x[2] <= 0 || x[2] > 1) return 1e30;
    set_fit_values(work, x);
    const std::vector<double> e = relative_errors(train, gpu, work);
    return std::inner_product(e.begin(), e.end(), e.begin(), 0.0) / std::max<std::size_t>(1, e.size());
  };
  const std::size_t n = fit_values(start).size();
  std::vector<std::vector<double>> points{fit_values(start)};
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<double> p = points[0];
    p[i] = p[i] != 0 ? p[i] * (i == 2 ? 0.95 : 1.3) : 0.01;
    points.push_back(p);
  }
  std::vector<double> values;
  for (const auto& p : points) values.push_back(loss(p));
  const auto along = [&](const std::vector<double>& from, const std::vector<double>& to, double t) {
    std::vector<double> out(n);
    for (std::size_t j = 0; j < n; ++j) out[j] = from[j] + t * (to[j] - from[j]);
    return out;
  };
  for (int it = 0; it < iterations; ++it) {
    std::vector<std::size_t> order(n + 1);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
    std::vector<std::vector<double>> p2;
    std::vector<double> v2;
    for (std::size_t i : order) p2.push_back(points[i]), v2.push_back(values[i]);
    points.swap(p2);
    values.swap(v2);
    std::vector<double> centre(n, 0.0);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) centre[j] += points[i][j] / n;
    const std::vector<double> reflected = along(centre, points[n], -1.0);
    const double fr = loss(reflected);
    if (fr < values[0]) {
      const std::vector<double> expanded = along(centre, points[n], -2.0);
      const double fe = loss(expanded);
      points[n] = fe < fr ? expanded : reflected;
      values[n] = std::min(fe, fr);
    } else if (fr < values[n - 1]) {
      points[n] = reflected, values[n] = fr;
    } else {
      const std::vector<double> contracted = along(centre, points[n], 0.5);
      const double fc = loss(contracted);
      if (fc < values[n]) {
        points[n] = contracted, values[n] = fc;
      } else {
        for (std::size_t i = 1; i <= n; ++i) {
          points[i] = along(points[0], points[i], 0.5);
          values[i] = loss(points[i]);
        }
      }
    }
  }
  const std::size_t best = std::min_element(values.begin(), values.end()) - values.begin();
  CudaKernelFit out = start;
  set_fit_values(out, points[best]);
  return out;
}

}  // namespace tilepath::perf
