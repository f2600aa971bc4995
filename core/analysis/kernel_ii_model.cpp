#include "core/analysis/kernel_ii_model.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/analysis/case_analysis.h"
#include "core/perf/cuda_latency_model.h"
#include "core/stage_graph.h"

namespace tilepath::analysis {
namespace {

constexpr double kHbmBoundFraction = 0.85;

nlohmann::json number_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

nlohmann::json stage_names(const std::vector<Stage>& stages) {
  nlohmann::json names = nlohmann::json::array();
  for (Stage s : stages) names.push_back(std::string(tilepath::to_string(s)));
  return names;
}

bool per_tile(Stage s) { return s != Stage::q_quant && s != Stage::combine; }

KernelAgent agent_of(Stage s, bool separate_kv) {
  if (s == Stage::k_load || s == Stage::v_load) return KernelAgent::memory;
  if (separate_kv && (s == Stage::k_prep || s == Stage::v_prep)) return KernelAgent::converter_warps;
  return KernelAgent::mma_warps;
}

double cost_of(const CaseRecord& rec, Stage s, CostMethod m) {
  for (const StageCostRow& r : rec.stage_costs)
    if (r.stage == s && r.method == m && std::isfinite(r.cost_us)) return r.cost_us;
  return NAN;
}

}  // namespace

std::string_view to_string(KernelAgent a) {
  switch (a) {
    case KernelAgent::memory:
      return "memory";
    case KernelAgent::mma_warps:
      return "mma_warps";
    case KernelAgent::converter_warps:
      return "converter_warps";
  }
  return "?";
}

std::optional<KernelIIPrediction> predict_kernel_ii(const CaseRecord& rec, int sm_count) {
  const OperatingPoint op = kernel_operating_point(rec);
  const StageGraph graph = StageGraph::build(op);
  const bool separate = op.mode == TransformMode::separate_kv;
  KernelIIPrediction p;
  p.busy_us.fill(NAN);
  p.present = {true, true, separate};
  bool any = false;
  for (Stage s : graph.stages()) {
    if (!per_tile(s)) continue;
    const double isolated = cost_of(rec, s, CostMethod::isolated);
    if (!std::isfinite(isolated)) {
      p.missing.push_back(s);
      continue;
    }
    any = true;
    // A slope below zero is noise around a stage too small to measure: it adds nothing.
    p.isolated_us[s] = isolated;
    double& busy = p.busy_us[static_cast<int>(agent_of(s, separate))];
    busy = (std::isfinite(busy) ? busy : 0.0) + std::max(0.0, isolated);
    const double removed = cost_of(rec, s, CostMethod::removed);
    if (std::isfinite(removed) && isolated > 0) p.hidden_fraction[s] = std::clamp(1.0 - removed / isolated, 0.0, 1.0);
  }
  // The ring or the compute side measured whole bounds the interval from below even where no
  // stage was measured apart (a wgmma case with its load_only kernel and no isolated stage).
  const auto ring = rec.measurement("tile_interval_load_only_us");
  const bool ring_measured = ring && std::isfinite(*ring);
  const auto compute_whole = rec.measurement("tile_interval_compute_only_us");
  const bool compute_measured = compute_whole && std::isfinite(*compute_whole);
  if (!any && !ring_measured && !compute_measured) return std::nullopt;
  if (graph.has_stage(Stage::v_prep)) p.v_hidden_fraction = p.hidden_fraction[Stage::v_prep];

  // The two loads share the ring's slots and the L2: measured apart, each has half the
  // kernel's bytes in flight and footprint, so their sum is not the ring's time. The
  // load_only kernel measures the ring whole.
  double& memory = p.busy_us[static_cast<int>(KernelAgent::memory)];
  p.memory_source = "k_load + v_load";
  if (ring_measured) {
    memory = std::max(0.0, *ring);
    p.memory_source = "load_only";
    // Measured whole, the ring needs neither load apart for the II.
    std::erase_if(p.missing, [](Stage s) { return s == Stage::k_load || s == Stage::v_load; });
  }
  // The compute side measured whole (a wgmma kernel's compute_only: its consumer warpgroup's
  // stages and barriers in turn, nothing loaded) stands for the sum of its stages, which misses
  // their barriers and how they overlap.
  double& compute = p.busy_us[static_cast<int>(KernelAgent::mma_warps)];
  p.compute_source = "isolated stages";
  if (compute_measured) {
    p.compute_isolated_sum_us = compute;
    compute = std::max(0.0, *compute_whole);
    p.compute_source = "compute_only";
    std::erase_if(p.missing, [&](Stage s) { return agent_of(s, separate) == KernelAgent::mma_warps; });
  }
  // separate_kv: a converter warp waits on the ring and converts in turn.
  double& converter = p.busy_us[static_cast<int>(KernelAgent::converter_warps)];
  if (separate && std::isfinite(memory)) converter = (std::isfinite(converter) ? converter : 0.0) + memory;

  for (int a = 0; a < kKernelAgentCount; ++a)
    if (std::isfinite(p.busy_us[a]) && p.busy_us[a] > p.ii_us) {
      p.ii_us = p.busy_us[a];
      p.limiting_agent = static_cast<KernelAgent>(a);
    }
  // The limiting agent's largest stage; the converter warps' stages include the ring's loads.
  const auto on_limiting_agent = [&](Stage s) {
    const KernelAgent a = agent_of(s, separate);
    return a == p.limiting_agent ||
           (separate && p.limiting_agent == KernelAgent::converter_warps && a == KernelAgent::memory);
  };
  double largest = -1;
  for (Stage s : graph.stages())
    if (per_tile(s) && on_limiting_agent(s) && p.isolated_us.has(s) && p.isolated_us[s] > largest) {
      largest = p.isolated_us[s];
      p.limiting_stage = s;
    }

  const bool ring_limits = p.limiting_agent == KernelAgent::memory && p.memory_source == "load_only";
  const bool compute_limits_whole = p.limiting_agent == KernelAgent::mma_warps && p.compute_source == "compute_only" &&
                                    !std::isfinite(p.compute_isolated_sum_us);
  const auto stands_for_limit = [&](Stage s) {
    if (ring_limits) return agent_of(s, separate) == KernelAgent::memory;
    if (compute_limits_whole) return agent_of(s, separate) == KernelAgent::mma_warps;
    return s == p.limiting_stage;
  };
  for (Stage s : graph.stages())
    if (per_tile(s) && stands_for_limit(s)) p.limit_stages.push_back(s);

  const perf::CudaKernelPlan plan = perf::plan_cuda_kernel(op, sm_count, std::max(0, rec.kernel.regs_per_thread));
  p.tile_tokens = static_cast<int>(rec.measurement("tile_tokens").value_or(plan.tile_tokens));
  p.ii_per_1k_tokens_us = p.tile_tokens > 0 ? p.ii_us * 1000.0 / p.tile_tokens : NAN;
  const double k_bytes = k_is_fp8(op.kv) ? 1 : 2, v_bytes = v_is_fp8(op.kv) ? 1 : 2;
  const double step_bytes = double(p.tile_tokens) * plan.kv_heads_per_cta * op.head_dim * (k_bytes + v_bytes);
  const double memory_busy = p.busy_us[static_cast<int>(KernelAgent::memory)];
  p.memory_gbps = memory_busy > 0 ? step_bytes * plan.resident_ctas / memory_busy * 1e-3 : NAN;  // bytes/us -> GB/s
  const double read_gbps = rec.measurement("read_bandwidth_gbps").value_or(NAN);
  switch (p.limiting_agent) {
    case KernelAgent::memory:
      p.resource = std::isfinite(read_gbps) && p.memory_gbps < kHbmBoundFraction * read_gbps ? "bytes_in_flight"
                                                                                             : "hbm_bandwidth";
      break;
    case KernelAgent::mma_warps:
      p.resource = "mma_warp_issue";
      break;
    case KernelAgent::converter_warps:
      p.resource = "converter_warps";
      break;
  }
  p.measured_ii_us = rec.measurement("tile_interval_us").value_or(NAN);
  p.unexplained_us = p.measured_ii_us - p.ii_us;
  return p;
}

KernelIILimit describe_limit(const KernelIIPrediction& k) {
  if (k.limiting_agent == KernelAgent::memory && k.memory_source == "load_only" && !k.isolated_us.has(Stage::k_load) &&
      !k.isolated_us.has(Stage::v_load))
    return {"the ring", "k_load and v_load, measured whole by the load_only kernel"};
  if (k.limiting_agent == KernelAgent::mma_warps && k.compute_source == "compute_only") {
    const std::string largest = k.isolated_us.has(k.limiting_stage)
                                    ? "; its largest stage " + std::string(tilepath::to_string(k.limiting_stage))
                                    : std::string();
    return {"the compute", "every stage, measured whole by the compute_only kernel" + largest};
  }
  return {std::string(tilepath::to_string(k.limiting_stage)), ""};
}

nlohmann::json KernelIIPrediction::to_json() const {
  nlohmann::json busy = nlohmann::json::object(), stages = nlohmann::json::object();
  for (int a = 0; a < kKernelAgentCount; ++a)
    if (present[a]) busy[std::string(to_string(static_cast<KernelAgent>(a)))] = number_or_null(busy_us[a]);
  for (int i = 0; i < kStageCount; ++i) {
    const Stage s = static_cast<Stage>(i);
    if (!isolated_us.has(s)) continue;
    stages[std::string(tilepath::to_string(s))] = {{"isolated_us", isolated_us[s]},
                                                   {"hidden_fraction", number_or_null(hidden_fraction.us[i])}};
  }
  const nlohmann::json missing_names = stage_names(missing);
  return {{"ii_us", ii_us},
          {"ii_per_1k_tokens_us", number_or_null(ii_per_1k_tokens_us)},
          {"tile_tokens", tile_tokens},
          {"busy_us", busy},
          {"memory_source", memory_source},
          {"compute_source", compute_source},
          {"compute_isolated_sum_us", number_or_null(compute_isolated_sum_us)},
          {"limiting_agent", std::string(to_string(limiting_agent))},
          {"limiting_stage", std::string(tilepath::to_string(limiting_stage))},
          {"limit_stages", stage_names(limit_stages)},
          {"resource", resource},
          {"memory_gbps", number_or_null(memory_gbps)},
          {"stages", stages},
          {"missing_stages", missing_names},
          {"ii_is_lower_bound", !missing.empty()},
          {"v_hidden_fraction", number_or_null(v_hidden_fraction)},
          {"measured_ii_us", number_or_null(measured_ii_us)},
          {"unexplained_us", number_or_null(unexplained_us)}};
}

}  // namespace tilepath::analysis
