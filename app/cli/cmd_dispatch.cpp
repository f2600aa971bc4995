// `tilepath dispatch --db FILE`: which variant to run at which batch and context, from
// the measured cases (core/analysis/dispatch.h): the winner per measured point with its
// margin, the crossovers, the dispatch table, its leave-one-out regret, and with
// --model the KV capacity and admitted concurrency per cache variant.

#include <cstdio>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/cli/cli_output.h"
#include "app/cli/command.h"
#include "app/cli/output_file.h"
#include "core/analysis/capacity.h"
#include "core/analysis/dispatch.h"
#include "core/op_fields.h"
#include "core/perf/gpu_model.h"
#include "core/perf/llm_model.h"
#include "core/store/run_store.h"

namespace tilepath::cli {
namespace {

struct DispatchFlags {
  std::string db, model, gpu = "h200", cache, distribution, backend, device;
  double memory_gib = 0;
  int context = 4096, page_size = 16;
  bool json = false;
};

std::string percent(double fraction) { return human_number(100.0 * fraction, "%.2f") + "%"; }

void print_group(const analysis::DispatchGroup& g, std::size_t index) {
  const OperatingPoint& s = g.shape;
  std::printf("group %zu: %s on %s, Hq/Hk %d/%d, D %d, page %d, %s\n", index, g.backend.c_str(), g.device.c_str(),
              s.q_heads, s.kv_heads, s.head_dim, s.page_size, std::string(to_string(s.cache)).c_str());
  // Short codes for the winners, in order of first appearance.
  std::map<std::string, char> code;
  for (const auto& [key, cell] : g.cells)
    if (cell.winner() != nullptr && !code.count(cell.winner()->variant))
      code[cell.winner()->variant] = static_cast<char>('A' + code.size());
  std::printf("  winner (margin over the runner-up) per batch x context\n  %8s", "B \\ S");
  for (int s_ : g.contexts) std::printf(" %12d", s_);
  std::printf("\n");
  for (int b : g.batches) {
    std::printf("  %8d", b);
    for (int s_ : g.contexts) {
      const analysis::DispatchCell* c = g.cell(b, s_);
      if (c == nullptr || c->winner() == nullptr) {
        std::printf(" %12s", "-");
        continue;
      }
      const std::string text = std::string(1, code[c->winner()->variant]) + " (" + percent(c->margin()) + ")";
      std::printf(" %12s", text.c_str());
    }
    std::printf("\n");
  }
  for (const auto& [variant, c] : code) std::printf("  %c = %s\n", c, variant.c_str());
}

int dispatch(const DispatchFlags& f) {
  analysis::DispatchOptions options;
  if (!f.cache.empty()) options.cache = parse_cache_state(f.cache, "--cache");
  options.backend = f.backend;
  options.device = f.device;
  options.gate_distribution = f.distribution;
  if (f.memory_gib < 0) throw UsageError("--memory-gib: must be > 0");
  check_field_int(*find_op_field("context"), f.context, "--context");
  check_field_int(*find_op_field("page_size"), f.page_size, "--page-size");
  std::optional<perf::LlmModel> model;
  if (!f.model.empty()) {
    try {
      model = perf::load_llm_model(f.model, perf::models_dir());
    } catch (const std::exception& e) {
      throw UsageError(std::string("--model: ") + e.what());
    }
  }
  require_existing(f.db, "--db");
  const RunStore store = RunStore::open_read_only(f.db);
  const analysis::DispatchTable table = analysis::build_dispatch(store.cases(), options);

  std::optional<analysis::CapacityTable> capacity;
  if (model) {
    analysis::CapacityOptions c;
    c.context = f.context;
    c.page_size = f.page_size;
    c.cache = options.cache.value_or(CacheState::hbm_cold);
    if (f.memory_gib > 0) {
      c.kv_budget_bytes = f.memory_gib * double(1ull << 30);
      c.budget_note = "--memory-gib " + human_number(f.memory_gib) + " for the KV cache";
    } else {
      perf::GpuModel gpu;
      try {
        gpu = perf::load_gpu_model(f.gpu);
      } catch (const std::exception& e) {
        throw UsageError(std::string("--gpu: ") + e.what());
      }
      if (model->parameters <= 0)
        throw UsageError("--model " + model->id + " states no parameter count, so the memory its weights take is " +
                         "unknown; give the KV budget with --memory-gib");
      c.kv_budget_bytes = std::max(0.0, gpu.memory_bytes - model->bf16_weight_bytes());
      c.budget_note = gpu.name + " memory (" + human_number(gpu.memory_bytes / double(1ull << 30)) + " GiB) minus " +
                      model->name + "'s BF16 weights (" +
                      human_number(model->bf16_weight_bytes() / double(1ull << 30)) +
                      " GiB); activations and workspace not subtracted";
    }
    capacity = analysis::capacity_table(*model, c, table);
  }

  if (f.json) {
    nlohmann::json j = table.to_json();
    j["db"] = f.db;
    j["capacity"] = capacity ? capacity->to_json() : nlohmann::json(nullptr);
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  if (table.groups.empty()) {
    std::printf("no ok case in %s to dispatch between (filters: cache %s, backend %s)\n", f.db.c_str(),
                f.cache.empty() ? "any" : f.cache.c_str(), f.backend.empty() ? "any" : f.backend.c_str());
    return kExitOk;
  }
  std::printf("%s\n\n", table.gate.c_str());
  for (std::size_t i = 0; i < table.groups.size(); ++i) {
    print_group(table.groups[i], i);
    std::printf("\n");
  }
  std::printf("crossovers (interpolated in log space between the measured points either side)\n");
  for (std::size_t i = 0; i < table.groups.size(); ++i)
    for (const analysis::Crossover& x : table.groups[i].crossovers)
      std::printf("  group %zu, %s %d: along %s at %s (between %d and %d): %s -> %s, margins %s / %s\n", i,
                  x.axis == "context" ? "batch" : "context", x.held, x.axis.c_str(), human_number(x.at).c_str(), x.lo,
                  x.hi, x.from.c_str(), x.to.c_str(), percent(x.margin_lo).c_str(), percent(x.margin_hi).c_str());
  std::printf("\nleave-one-out regret over %zu points: median %s, p90 %s, max %s\n", table.regret.points.size(),
              percent(table.regret.median).c_str(), percent(table.regret.p90).c_str(),
              percent(table.regret.max).c_str());
  if (capacity) {
    std::printf("\ncapacity of %s (%d layers, Hq/Hk %d/%d, D %d) at context %d, page %d: %s\n",
                capacity->model.name.c_str(), capacity->model.layers, capacity->model.q_heads, capacity->model.kv_heads,
                capacity->model.head_dim, f.context, f.page_size, capacity->options.budget_note.c_str());
    std::printf("latencies: %s\n", capacity->latency_note.c_str());
    std::printf("  %-14s %12s %14s %10s  %-26s %12s %12s\n", "storage", "B/token", "KV tokens", "sequences",
                "fastest measured variant", "attn ITL us", "attn tok/s");
    for (const analysis::CapacityRow& r : capacity->rows)
      std::printf("  %-14s %12s %14s %10d  %-26s %12s %12s%s\n", r.storage.c_str(),
                  human_number(r.bytes_per_token, "%.0f").c_str(), human_number(r.kv_tokens, "%.0f").c_str(),
                  r.admitted, r.variant.empty() ? "-" : r.variant.c_str(), human_number(r.attention_itl_us).c_str(),
                  human_number(r.tokens_per_s, "%.0f").c_str(), r.extrapolated ? "  (extrapolated)" : "");
  }
  return kExitOk;
}

}  // namespace

Command add_dispatch_command(CLI::App& app) {
  auto f = std::make_shared<DispatchFlags>();
  CLI::App* sub = app.add_subcommand(
      "dispatch", "Which variant to run at which batch and context: winners, crossovers, regret, capacity");
  sub->add_option("--db", f->db, "database (opened read-only)")->required();
  sub->add_option("--cache", f->cache, "only this cache state: l2_warm, hbm_cold (default: both)");
  sub->add_option("--backend", f->backend, "only cases of this backend");
  sub->add_option("--device", f->device, "only cases of this device name");
  sub->add_option("--distribution", f->distribution,
                  "exclude variants whose stored gate result on this distribution failed (e.g. qwen_bias)");
  sub->add_option("--model", f->model, "LLM from models/llms for the capacity table (e.g. llama-3.1-8b)");
  sub->add_option("--memory-gib", f->memory_gib, "KV-cache budget in GiB (default: --gpu memory minus the weights)");
  sub->add_option("--gpu", f->gpu, "GPU model from models/gpus whose memory is the budget")->default_str("h200");
  sub->add_option("--context", f->context, "tokens per sequence for the capacity table")->default_str("4096");
  sub->add_option("--page-size", f->page_size, "KV page size for the capacity table")->default_str("16");
  sub->add_flag("--json", f->json, "print JSON (docs/dispatch.md has the schema)");
  return {sub, [f](const CliContext&) { return dispatch(*f); }};
}

}  // namespace tilepath::cli
