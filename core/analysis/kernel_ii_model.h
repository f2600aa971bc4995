#pragma once
// The tile interval of the CUDA kernel that ran, from its isolated stage costs
// (docs/stage-model.md, "Kernel II model"): the stages serialised on the warps that run
// them in our kernels, and the limit named as a stage, an agent and a resource.
//
//   memory           the ring alone: the load_only kernel's tile interval (K and V
//                    through the real ring, the kernel's own L2 footprint), else
//                    k_load + v_load
//   mma_warps        every per-tile compute stage    (separate_kv: qk, k_bias, softmax, pv, accum),
//                    or the compute_only kernel's tile interval where it was measured (the
//                    wgmma kernels' consumer warpgroup: its stages and barriers measured whole)
//   converter_warps  memory + k_prep + v_prep        (separate_kv only: the converter warps
//                                                     own the ring, so its waits and their
//                                                     conversions take turns on one warp)
//   II = max over the agents of their busy time per tile
//
// Isolated costs are measured at the real kernel's CTAs per SM, so the sharing of the SM
// by its resident CTAs is in them; the launch plan (core/perf/cuda_kernel_plan.h) gives
// the bytes of a step and the resident CTAs, so that a memory limit can be named as the
// HBM bandwidth or as too few bytes in flight. The prediction never reads the case's own
// tile interval or latency; the measured interval is only compared with it.

#include <array>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/stage.h"
#include "core/store/run_store.h"

namespace tilepath::analysis {

enum class KernelAgent { memory, mma_warps, converter_warps };
inline constexpr int kKernelAgentCount = 3;
std::string_view to_string(KernelAgent a);

struct KernelIIPrediction {
  double ii_us = 0;                // per tile of tile_tokens tokens of one kv head
  double ii_per_1k_tokens_us = 0;  // ii_us x 1000 / tile_tokens
  int tile_tokens = 0;
  // Busy time per tile of each agent; NaN when none of its stages has an isolated cost.
  std::array<double, kKernelAgentCount> busy_us{};
  std::array<bool, kKernelAgentCount> present{};  // the kernel has the agent (converter warps: separate_kv)
  // Where the memory agent's time comes from: "load_only" (measured whole) or
  // "k_load + v_load" (the sum of the two isolated loads, for kernels without a load_only
  // variant).
  std::string memory_source;
  // Where the mma_warps agent's time comes from: "isolated stages" (their sum) or
  // "compute_only" (measured whole); with compute_only, the sum of the isolated stages beside
  // it (NaN when none was measured).
  std::string compute_source;
  double compute_isolated_sum_us = NAN;
  KernelAgent limiting_agent = KernelAgent::memory;
  Stage limiting_stage = Stage::k_load;
  // The graph's stages the limit stands for, to mark on a drawing of the graph: both loads when
  // the ring measured whole limits; when the compute measured whole limits, its largest isolated
  // stage, or every compute stage where none was measured apart; else the limiting stage.
  std::vector<Stage> limit_stages;
  // hbm_bandwidth: memory limits at >= 85% of the measured read bandwidth;
  // bytes_in_flight: memory limits below it (the CTAs per SM x ring depth hold too few
  // bytes for the latency); mma_warp_issue; converter_warps.
  std::string resource;
  double memory_gbps = 0;          // the step's bytes over the memory agent's busy time, all resident CTAs
  std::vector<Stage> missing;      // per-tile stages of the graph without an isolated cost (the II is a lower bound)
  StageCosts isolated_us;          // per present per-tile stage
  StageCosts hidden_fraction;      // 1 - removed / isolated, clamped to [0, 1]; NaN without both
  double v_hidden_fraction = NAN;  // of v_prep (docs/stage-model.md); NaN without it
  double measured_ii_us = NAN;
  double unexplained_us = NAN;  // measured - predicted: what no stage explains (negative: the model is above)
  nlohmann::json to_json() const;
};

// What limits the kernel II, in words: `what` is the ring (the memory agent measured whole by
// load_only, neither load apart), the compute (the mma warps measured whole by compute_only) or
// the limiting stage's name; `how` says how that was measured ("" for a stage).
struct KernelIILimit {
  std::string what;
  std::string how;
};
KernelIILimit describe_limit(const KernelIIPrediction& k);

// nullopt when the case has neither an isolated cost of any per-tile stage nor a side measured
// whole (the ring: tile_interval_load_only_us; the compute: tile_interval_compute_only_us).
// With the ring alone (a wgmma case
// measured without isolated compute stages: every head dim but 128, and the cases stored
// before those kernels existed) the II is the ring's, a lower bound with every compute stage
// missing, and `unexplained_us` is what the compute adds to it.
// The case's own read-bandwidth ceiling is its measurement read_bandwidth_gbps.
std::optional<KernelIIPrediction> predict_kernel_ii(const CaseRecord& rec, int sm_count = 132);

}  // namespace tilepath::analysis
