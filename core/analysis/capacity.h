#pragma once
// KV-cache capacity and admitted concurrency per cache variant for a model and a memory
// budget, with the attention part of the inter-token latency at that concurrency from
// the measured per-layer latencies (docs/dispatch.md, "Capacity").

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/analysis/dispatch.h"
#include "core/perf/llm_model.h"

namespace tilepath::analysis {

struct CapacityOptions {
  double kv_budget_bytes = 0;  // memory the KV cache may use
  std::string budget_note;     // how the budget was obtained, in words
  int context = 4096;          // tokens per sequence
  int page_size = 16;
  CacheState cache = CacheState::hbm_cold;  // which measured latencies give the ITL
};

struct CapacityRow {
  KvDtype kv = KvDtype::k8v8;
  KRepr k_repr = KRepr::plain;
  std::string storage;              // "k8v8", "k8v8/prebias"
  double bytes_per_token = 0;       // K + V of one token over all layers
  double fixed_bytes = 0;           // per layer: the FP8 scales, a prebias key bias (F32); all layers
  double kv_tokens = 0;             // tokens the budget holds
  int admitted = 0;                 // sequences of `context` tokens, each rounded up to whole pages
  std::string variant;              // the fastest measured variant with this storage ("" = none measured)
  double attention_layer_us = NAN;  // its latency at (admitted, context), interpolated in log-log
  double attention_itl_us = NAN;    // layers x the per-layer latency: the attention part of the ITL only
  double tokens_per_s = NAN;        // admitted / attention ITL (attention only)
  bool extrapolated = false;        // admitted or context outside the measured batches / contexts
};

struct CapacityTable {
  perf::LlmModel model;
  CapacityOptions options;
  std::vector<CapacityRow> rows;
  std::string latency_note;  // where the latencies come from, or why there are none
  nlohmann::json to_json() const;
};

// Storage per token and per layer of a cache variant of the model (bytes).
double kv_bytes_per_token_per_layer(const perf::LlmModel& model, KvDtype kv);
double fixed_bytes_per_layer(const perf::LlmModel& model, KvDtype kv, KRepr k_repr);

// Rows for every dtype control, plain and (FP8 K) prebias. Latencies come from the
// dispatch group of `dispatch` with the model's heads, head dim, page size and cache
// state; none when the database has no such shape.
CapacityTable capacity_table(const perf::LlmModel& model, const CapacityOptions& options,
                             const DispatchTable& dispatch);

}  // namespace tilepath::analysis
