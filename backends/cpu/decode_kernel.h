#pragma once
// One CPU decode step over a paged cache: q_quant (fp8_qk), the tiled main loop over
// work items (request, kv head, split) on std::threads, the log-sum-exp combine of
// split partials, and the BF16 output store.

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backends/abi/tilepath_backend.h"
#include "core/numerics/decode_problem.h"
#include "core/numerics/rope.h"

namespace tilepath::cpu {

inline constexpr int kNoAblation = -1;

struct DecodeLaunch {
  const numerics::DecodeProblem* problem = nullptr;
  // Tokens per request; empty = problem->lengths. Shorter lengths (<= stored) let the
  // tile-interval measurement rerun the same cache at half context.
  std::vector<std::int32_t> lengths;
  int splits = 1;                   // >= 1
  int threads = 1;                  // >= 1
  int removed_stage = kNoAblation;  // enum tp_stage compiled out of the kernel, or kNoAblation
  int doubled_stage = kNoAblation;  // enum tp_stage run twice per tile/step (ignored with removed_stage)
  bool stage_timers = false;        // time every named stage call (isolated costs)
  // The kernel's cos/sin cache: required for a pre_rope op and for a post_rope prebias op.
  const numerics::RopeTable* rope = nullptr;
  // gfx942 numerics: the problem's FP8 bytes are E4M3 FNUZ (numerics::to_fnuz_cache), Q and
  // k_only's P are quantized to FNUZ as the HIP kernels do (VariantPlan::fnuz).
  bool fnuz = false;
  // Called on the launching thread between its work items; return true to cancel.
  std::function<bool(double fraction)> poll;
};

struct DecodeOutcome {
  std::vector<float> out;  // [batch][q_heads][head_dim], BF16-rounded
  bool cancelled = false;
  long long tiles = 0;  // tiles processed over all work items
  int work_items = 0;
  std::array<double, TP_STAGE_COUNT> stage_ns{};  // summed over threads (stage_timers only)
};

DecodeOutcome run_decode(const DecodeLaunch& launch);

// Split count for splits = 0: enough work items for every thread, tiles left in each split.
int choose_splits(const numerics::DecodeProblem& p, int threads);

// e.g. "cpu_decode<k8v8,transform,full,d128>" (+",prebias" or ",mxfp8")
std::string kernel_name(const OperatingPoint& op);

}  // namespace tilepath::cpu
