#pragma once
// Dispatch by operating point: from a run database, per measured point the fastest
// admitted variant and its margin over the runner-up; the crossover points along
// context (at a fixed batch) and along batch (at a fixed context), interpolated between
// measured points in log space; a dispatch table of key ranges; and the table's quality
// by leave-one-out regret. docs/dispatch.md has the rules and the JSON schema.
//
// A variant is what the variant fields of the field table choose (kv, k_path, mode,
// k_repr, rope, scale, splits, mma); a point is the rest (batch, context, heads, head dim,
// page size, cache state), within one backend and device. Cases with ragged batches
// are left out (their batch and context do not place them on the grid).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/store/run_store.h"

namespace tilepath::analysis {

// "k8v8/fp8_qk/k_only", with "/prebias", "/wgmma", "/pre_rope", "/per_tensor", "/splits=N"
// when those differ from the defaults.
std::string dispatch_variant_label(const OperatingPoint& op);
// op with its variant fields set to the defaults (the point it measures).
OperatingPoint dispatch_point(const OperatingPoint& op);

struct DispatchOptions {
  std::optional<CacheState> cache;  // only this cache state; all when unset
  std::string backend, device;      // only this backend / device; any when empty
  // Gate results that exclude variants: the gate rows (is_gate_row) of this distribution
  // ("gaussian", "qwen_bias", "npy:<file>", ...); "" = none applied. The speed runs'
  // kernel check rows are never a gate.
  std::string gate_distribution;
};

struct DispatchCandidate {
  std::string variant;
  OperatingPoint op;  // the case's
  std::int64_t case_id = 0;
  double latency_us = NAN;
};

struct DispatchExclusion {
  std::string variant;
  std::int64_t case_id = 0;
  std::string reason;
};

// One measured point: its admitted variants, fastest first, and the excluded ones.
struct DispatchCell {
  int batch = 0, context = 0;
  std::vector<DispatchCandidate> admitted;
  std::vector<DispatchExclusion> excluded;
  const DispatchCandidate* winner() const { return admitted.empty() ? nullptr : &admitted.front(); }
  const DispatchCandidate* runner_up() const { return admitted.size() < 2 ? nullptr : &admitted[1]; }
  // (runner-up − winner) / winner; NaN with fewer than two admitted variants.
  double margin() const;
};

// Where the winner changes between two neighbouring measured points.
struct Crossover {
  std::string axis;      // "context" (batch held) or "batch" (context held)
  int held = 0;          // the batch (axis context) or context (axis batch) held
  double at = NAN;       // the interpolated crossing, in the axis' unit (tokens or requests)
  int lo = 0, hi = 0;    // the measured points either side
  std::string from, to;  // the winner at lo and at hi
  // At lo: how much slower `to` is than `from`; at hi: how much slower `from` is than `to`.
  double margin_lo = NAN, margin_hi = NAN;
  std::vector<std::int64_t> cases;  // from@lo, to@lo, from@hi, to@hi
};

// One entry of the dispatch table: a key range and the variant it runs.
struct DispatchEntry {
  int batch_lo = 0, batch_hi = 0;         // inclusive
  double context_lo = 0, context_hi = 0;  // [lo, hi)
  std::string variant;
  std::vector<std::int64_t> cases;  // the measured winning cases inside the range
};

// The points of one backend, device, shape (heads, head dim, page size) and cache state.
struct DispatchGroup {
  std::string backend, device;
  OperatingPoint shape;                               // batch and context of the first point; variant fields default
  std::vector<int> batches, contexts;                 // measured, ascending
  std::map<std::pair<int, int>, DispatchCell> cells;  // (batch, context)
  std::vector<Crossover> crossovers;
  std::vector<DispatchEntry> entries;

  const DispatchCell* cell(int batch, int context) const;
  // A variant's latency at (batch, context) interpolated in log-log from the group's
  // measured points, leaving out `skip` (leave-one-out). NaN when it cannot be placed.
  double interpolated_latency(const std::string& variant, int batch, int context,
                              std::optional<std::pair<int, int>> skip = std::nullopt) const;
  // The variant with the lowest interpolated latency there (ties: the label first in order).
  std::string predicted_winner(int batch, int context, std::optional<std::pair<int, int>> skip = std::nullopt) const;
};

struct RegretPoint {
  std::size_t group = 0;
  int batch = 0, context = 0;
  std::string chosen, best;
  double regret = NAN;  // latency(chosen) / latency(best) − 1, both measured there
};

struct RegretSummary {
  std::vector<RegretPoint> points;
  double median = NAN, p90 = NAN, max = NAN;  // fractions
};

struct DispatchTable {
  std::vector<DispatchGroup> groups;
  RegretSummary regret;
  std::string gate;  // which gate results were applied, in words
  nlohmann::json to_json() const;
};

DispatchTable build_dispatch(const std::vector<CaseSummary>& cases, const DispatchOptions& options = {});

// Leave-one-out: for every measured point with two or more admitted variants, dispatch
// from the other points of its group and compare the chosen variant's measured latency
// there with the best measured there.
RegretSummary leave_one_out_regret(const std::vector<DispatchGroup>& groups);

}  // namespace tilepath::analysis
