#pragma once
// The numerical gate: attention over a cache representation against attention at full
// precision, per (request, kv head) row (docs/gate.md).
//
// Reference: float64 attention with the query as given (BF16) and the original keys and
// values (BF16, never FP8-quantized), the keys as the model makes them (RoPE applied).
// Representation: the same in float64 over the cache as the kernel reconstructs it (FP8
// E4M3 with a per-head or per-tensor scale, the pre-bias residual with the exact bias, or
// MXFP8 blocks), with the path's own arithmetic: Q quantized to E4M3 for fp8_qk, P
// quantized to E4M3 for k_only, the output rounded to BF16. The kernels' agreement with
// that arithmetic is the separate kernel check of every speed run.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/numerics/gate_metrics.h"
#include "core/numerics/npy_reader.h"
#include "core/operating_point.h"
#include "core/quality/key_model.h"

namespace tilepath::quality {

struct GateSettings {
  OperatingPoint op;  // shape and representation: kv, k_path, mode, k_repr, rope, scale
  std::uint64_t seed = 1;
  // Autoregressive decode: this many steps after the context, one new token and a fresh
  // query each; 0 = one step at the context.
  int steps = 0;
  // With steps: FP8 scales fixed from the first `context` tokens (a calibration prefix),
  // or recomputed over every token present at each step.
  bool scales_from_prefix = true;
  numerics::GateThresholds thresholds;
};

// An imported K/V dump (one layer of an .npy file) and an optional bias.
struct ImportedKv {
  std::string file, bias_file;
  numerics::NpyKvTensor keys;                   // post-RoPE keys as the cache holds them
  std::optional<numerics::NpyKvTensor> values;  // Gaussian values when absent
  std::optional<numerics::NpyKvBias> bias;      // the exact key bias (prebias); none: zeros
  int layer = 0;
};

struct GateStep {
  int step = 0, tokens = 0;
  numerics::GateMetrics metrics;
  numerics::GateVerdict verdict;
};

struct GateResult {
  std::string distribution;    // "gaussian", "qwen_bias", "npy:<file>"
  std::string representation;  // "k8v8/transform/full/plain/post_rope/per_head"
  GateSettings settings;
  numerics::GateMetrics metrics;  // at the context, or the worst step's
  numerics::GateVerdict verdict;  // passed only when every step passed
  std::vector<GateStep> steps;    // one per step (one entry without steps)
  // {"distribution", "representation", "passed", "failures", "metrics": {rel_l2, max_abs,
  //  kl, top8, top32 each {worst, median}}, "thresholds", "steps": [...], "operating_point"}
  nlohmann::json to_json() const;
};

// "k8v8/transform/full/plain/post_rope/per_head": every field that changes the numerics.
std::string representation_label(const OperatingPoint& op);

GateResult evaluate_gate(const KeyModel& keys, const GateSettings& settings);
// The dump fixes the shape: its kv heads, head dim and tokens (the context) replace the
// operating point's; batch 1. q heads keep the op's GQA ratio.
GateResult evaluate_gate(const ImportedKv& dump, const GateSettings& settings);

}  // namespace tilepath::quality
