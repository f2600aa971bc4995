#include "core/analysis/capacity.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

namespace tilepath::analysis {
namespace {

nlohmann::json number_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

const DispatchGroup* group_for(const DispatchTable& dispatch, const perf::LlmModel& model,
                               const CapacityOptions& options) {
  for (const DispatchGroup& g : dispatch.groups) {
    const OperatingPoint& s = g.shape;
    if (s.q_heads == model.q_heads && s.kv_heads == model.kv_heads && s.head_dim == model.head_dim &&
        s.page_size == options.page_size && s.cache == options.cache)
      return &g;
  }
  return nullptr;
}

// The storage (kv, k_repr) of a variant label's case in the group.
bool stores_as(const DispatchCandidate& d, KvDtype kv, KRepr k_repr) { return d.op.kv == kv && d.op.k_repr == k_repr; }

}  // namespace

double kv_bytes_per_token_per_layer(const perf::LlmModel& model, KvDtype kv) {
  const double k_bytes = k_is_fp8(kv) ? 1.0 : 2.0;
  const double v_bytes = v_is_fp8(kv) ? 1.0 : 2.0;
  return double(model.kv_heads) * model.head_dim * (k_bytes + v_bytes);
}

double fixed_bytes_per_layer(const perf::LlmModel& model, KvDtype kv, KRepr k_repr) {
  // One F32 scale per kv head for each FP8 tensor (per-head scales), and the exact key
  // bias of a prebias cache (F32 per kv head and channel).
  const double scales = 4.0 * model.kv_heads * ((k_is_fp8(kv) ? 1 : 0) + (v_is_fp8(kv) ? 1 : 0));
  const double bias = k_repr == KRepr::prebias ? 4.0 * model.kv_heads * model.head_dim : 0.0;
  return scales + bias;
}

CapacityTable capacity_table(const perf::LlmModel& model, const CapacityOptions& options,
                             const DispatchTable& dispatch) {
  CapacityTable table;
  table.model = model;
  table.options = options;
  const DispatchGroup* group = group_for(dispatch, model, options);
  table.latency_note = group != nullptr
                           ? "measured on " + group->backend + " (" + group->device +
                                 "), interpolated in log-log between measured "
                                 "batches and contexts; attention only (no projections, MLP or sampling)"
                           : "no measured case has this model's shape (Hq/Hk " + std::to_string(model.q_heads) + "/" +
                                 std::to_string(model.kv_heads) + ", D " + std::to_string(model.head_dim) + ", page " +
                                 std::to_string(options.page_size) + ", " + std::string(to_string(options.cache)) +
                                 "): capacity only";
  const int pages_per_sequence = (options.context + options.page_size - 1) / options.page_size;
  const double tokens_per_sequence = double(pages_per_sequence) * options.page_size;
  for (KvDtype kv : {KvDtype::k16v16, KvDtype::k8v16, KvDtype::k16v8, KvDtype::k8v8}) {
    for (KRepr k_repr : {KRepr::plain, KRepr::prebias}) {
      if (k_repr == KRepr::prebias && !k_is_fp8(kv)) continue;
      CapacityRow row;
      row.kv = kv;
      row.k_repr = k_repr;
      row.storage = std::string(to_string(kv)) + (k_repr == KRepr::plain ? "" : "/" + std::string(to_string(k_repr)));
      row.bytes_per_token = kv_bytes_per_token_per_layer(model, kv) * model.layers;
      row.fixed_bytes = fixed_bytes_per_layer(model, kv, k_repr) * model.layers;
      const double usable = std::max(0.0, options.kv_budget_bytes - row.fixed_bytes);
      // Whole sequences of whole pages.
      row.admitted = static_cast<int>(std::floor(usable / (row.bytes_per_token * tokens_per_sequence)));
      row.kv_tokens = std::floor(usable / (row.bytes_per_token * options.page_size)) * options.page_size;
      if (group != nullptr && row.admitted > 0) {
        // The fastest measured variant with this storage, at the admitted batch.
        double best = INFINITY;
        for (const auto& [key, cell] : group->cells)
          for (const DispatchCandidate& d : cell.admitted)
            if (stores_as(d, kv, k_repr)) {
              const double us = group->interpolated_latency(d.variant, row.admitted, options.context);
              if (std::isfinite(us) && us < best) best = us, row.variant = d.variant;
            }
        if (std::isfinite(best)) {
          row.attention_layer_us = best;
          row.attention_itl_us = best * model.layers;
          row.tokens_per_s = row.admitted / (row.attention_itl_us * 1e-6);
          row.extrapolated = row.admitted < group->batches.front() || row.admitted > group->batches.back() ||
                             options.context < group->contexts.front() || options.context > group->contexts.back();
        }
      }
      table.rows.push_back(std::move(row));
    }
  }
  return table;
}

nlohmann::json CapacityTable::to_json() const {
  nlohmann::json rows_json = nlohmann::json::array();
  for (const CapacityRow& r : rows)
    rows_json.push_back({{"storage", r.storage},
                         {"bytes_per_token", r.bytes_per_token},
                         {"fixed_bytes", r.fixed_bytes},
                         {"kv_tokens", r.kv_tokens},
                         {"admitted_sequences", r.admitted},
                         {"variant", r.variant.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.variant)},
                         {"attention_layer_us", number_or_null(r.attention_layer_us)},
                         {"attention_itl_us", number_or_null(r.attention_itl_us)},
                         {"attention_tokens_per_s", number_or_null(r.tokens_per_s)},
                         {"extrapolated", r.extrapolated}});
  return {{"model", model.id},
          {"model_name", model.name},
          {"layers", model.layers},
          {"q_heads", model.q_heads},
          {"kv_heads", model.kv_heads},
          {"head_dim", model.head_dim},
          {"kv_budget_bytes", options.kv_budget_bytes},
          {"budget", options.budget_note},
          {"context", options.context},
          {"page_size", options.page_size},
          {"cache", std::string(to_string(options.cache))},
          {"latencies", latency_note},
          {"rows", rows_json}};
}

}  // namespace tilepath::analysis
