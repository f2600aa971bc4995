#pragma once
// Stages of the decode-attention stage graph and the agents that execute them.

#include <array>
#include <string_view>

#include "backends/abi/tilepath_backend.h"

namespace tilepath {

enum class Stage {
  k_load = TP_STAGE_K_LOAD,
  k_prep = TP_STAGE_K_PREP,
  qk = TP_STAGE_QK,
  softmax = TP_STAGE_SOFTMAX,
  v_load = TP_STAGE_V_LOAD,
  v_prep = TP_STAGE_V_PREP,
  pv = TP_STAGE_PV,
  accum = TP_STAGE_ACCUM,
  q_quant = TP_STAGE_Q_QUANT,  // once per decode step
  combine = TP_STAGE_COMBINE,  // once per step (split-KV merge)
  k_bias = TP_STAGE_K_BIAS,    // prebias K: q.RoPE_t(b) of the exact bias added to the tile's scores
};
inline constexpr int kStageCount = TP_STAGE_COUNT;
inline constexpr std::array<Stage, 9> kTileStages = {Stage::k_load, Stage::k_prep,  Stage::qk,
                                                     Stage::k_bias, Stage::softmax, Stage::v_load,
                                                     Stage::v_prep, Stage::pv,      Stage::accum};

// Execution resources. With the default assignment each compute agent is one
// warpgroup role that overlaps with the others across adjacent tiles (FA3-style),
// which is what makes II a max over stages rather than their sum.
enum class Agent {
  memory,     // HBM -> SMEM copy pipe (TMA / cp.async issued by producer warps)
  transform,  // dedicated conversion warps (separate_kv)
  qk_mma,     // warps issuing the QK MMA (and inline K conversion in full/k_only)
  softmax,    // online-softmax math (max, exp, rescale)
  pv_mma,     // warps issuing the PV MMA, inline V conversion (full) and the accumulate
};
inline constexpr int kAgentCount = 5;

enum class CostMethod {
  isolated = TP_COST_ISOLATED,
  removed = TP_COST_REMOVED,
  doubled = TP_COST_DOUBLED,
  model = TP_COST_MODEL
};

std::string_view to_string(Stage s);
std::string_view to_string(Agent a);
std::string_view to_string(CostMethod m);
Stage parse_stage(std::string_view s);  // throws ValidationError
Agent parse_agent(std::string_view s);
CostMethod parse_cost_method(std::string_view s);

// Cost per tile in microseconds, indexed by Stage; NaN = absent/unknown.
struct StageCosts {
  std::array<double, kStageCount> us;
  StageCosts();  // all NaN
  double& operator[](Stage s) { return us[static_cast<int>(s)]; }
  double operator[](Stage s) const { return us[static_cast<int>(s)]; }
  bool has(Stage s) const;  // finite
  // The cost the models (II, pipeline schedule) run a stage at: unknown (NaN) and
  // below-zero costs (an ablation difference, not a duration) count as 0.
  double modelled(Stage s) const;
};

}  // namespace tilepath
