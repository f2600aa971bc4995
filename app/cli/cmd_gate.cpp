// `tilepath gate`: does a cache representation pass the numerical gate on a key
// distribution? Attention over the representation against attention at full precision
// (core/quality/gate.h, docs/gate.md), per (request, kv head) row.

#include <cstdio>
#include <filesystem>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/cli/cli_output.h"
#include "app/cli/command.h"
#include "app/cli/op_flags.h"
#include "app/cli/seed_flag.h"
#include "core/case_runner.h"
#include "core/json_input.h"
#include "core/perf/gpu_model.h"
#include "core/quality/gate.h"
#include "core/store/run_store.h"

namespace tilepath::cli {
namespace {

struct GateFlags {
  OpFlags op;
  std::string distribution = "gaussian", values, bias, dtype = "float32", db, thresholds, scales = "prefix";
  int layer = 0, steps = 0;
  double dof = 0;
  std::uint64_t seed = 1;
  bool all = false, json = false;
};

numerics::NpyElementType parse_dtype(const std::string& s) {
  for (auto t :
       {numerics::NpyElementType::float32, numerics::NpyElementType::float16, numerics::NpyElementType::bfloat16})
    if (to_string(t) == s) return t;
  throw UsageError("--dtype: unknown value '" + s + "'; allowed: float32|float16|bfloat16");
}

bool is_npy(const std::string& s) { return s.size() > 4 && s.substr(s.size() - 4) == ".npy"; }

// The representations to compare: the operating point's, and with --all every K
// representation of its dtype control and path, and the K16/V8 fallback.
std::vector<OperatingPoint> representations(const OperatingPoint& op, bool all) {
  std::vector<OperatingPoint> out{op};
  if (!all) return out;
  auto add = [&](OperatingPoint o) {
    if (o.problems().empty() && std::find(out.begin(), out.end(), o) == out.end()) out.push_back(o);
  };
  if (k_is_fp8(op.kv)) {
    for (KRepr r : {KRepr::plain, KRepr::prebias, KRepr::mxfp8})
      for (RopeLayout rope : {RopeLayout::post_rope, RopeLayout::pre_rope}) {
        if (r == KRepr::mxfp8 && rope == RopeLayout::pre_rope) continue;
        OperatingPoint o = op;
        o.k_repr = r;
        o.rope = rope;
        add(o);
      }
  }
  OperatingPoint fallback = op;
  fallback.kv = KvDtype::k16v8;
  fallback.k_repr = KRepr::plain;
  fallback.rope = RopeLayout::post_rope;
  apply_path_defaults(fallback, false, false);
  add(fallback);
  return out;
}

// One stored case per representation, in a run of the `gate` pseudo-backend.
void store(const std::string& db, const std::vector<quality::GateResult>& results, const CliContext& context) {
  RunStore s = RunStore::open(db);
  RunInfo run;
  run.backend = "gate";
  run.backend_version = "1";
  run.device = "float64 on the host";
  run.command = context.command_line;
  run.notes = "numerical gate (docs/gate.md)";
  run.tool_version = TILEPATH_VERSION;
  s.begin_run(run);
  for (const quality::GateResult& r : results) {
    CaseRecord rec;
    rec.op = r.settings.op;
    rec.case_key = rec.op.key() + "|gate=" + r.distribution + "|seed=" + std::to_string(r.settings.seed) +
                   "|steps=" + std::to_string(r.settings.steps);
    rec.status = CaseStatus::ok;
    rec.kernel.kernel_name = "gate:" + r.representation;
    const numerics::GateThresholds& t = r.settings.thresholds;
    auto row = [&](const char* metric, const numerics::GateSummary& m, double threshold, bool at_most) {
      const bool passed = std::isnan(threshold) || (at_most ? m.worst <= threshold : m.worst >= threshold);
      rec.quality.push_back({metric, m.worst, threshold, passed, r.distribution});
      rec.measurements.push_back({std::string("gate_") + metric + "_median", m.median, ""});
    };
    row("rel_l2", r.metrics.rel_l2, t.rel_l2, true);
    row("max_abs", r.metrics.max_abs, t.max_abs, true);
    row("kl", r.metrics.kl, t.kl, true);
    row("top8", r.metrics.top8, t.top8, false);
    row("top32", r.metrics.top32, t.top32, false);
    rec.measurements.push_back({"gate_rows_checked", double(r.metrics.rows.size()), "rows"});
    rec.measurements.push_back({"gate_rows_total", double(r.metrics.rows_total), "rows"});
    rec.measurements.push_back({"gate_passed", r.verdict.passed ? 1.0 : 0.0, "bool"});
    const std::string json = r.to_json().dump(2);
    rec.artifacts.push_back({"gate.json", "application/json", std::vector<std::uint8_t>(json.begin(), json.end())});
    s.add_case(run.id, rec);
  }
  s.finish_run(run.id);
}

int gate(const GateFlags& f, const CliContext& context) {
  OperatingPoint op = build_operating_point(f.op);
  // The gate's attention is computed on the host with mma_sync's arithmetic (FP32
  // accumulation); wgmma's FP8 accumulation is not documented bit-exactly. Its results
  // apply to a representation on every family (core/analysis/dispatch.cpp, gate_key).
  if (op.mma != Mma::mma_sync)
    throw UsageError("--mma: the gate emulates mma_sync's numerics; " + std::string(to_string(op.mma)) +
                     " cannot be emulated bit-exactly; allowed: mma_sync");
  if (f.steps < 0 || f.steps > 100000) throw UsageError("--steps: must be in 0..100000");
  if (f.scales != "prefix" && f.scales != "per_step") throw UsageError("--scales: allowed: prefix|per_step");
  quality::GateSettings settings;
  settings.op = op;
  settings.seed = f.seed;
  settings.steps = f.steps;
  settings.scales_from_prefix = f.scales == "prefix";
  if (!f.thresholds.empty()) {
    try {
      settings.thresholds = numerics::GateThresholds::from_json(parse_json_input(f.thresholds, "--thresholds"));
    } catch (const JsonInputError& e) {
      throw UsageError("--thresholds: " + e.problem);
    } catch (const std::exception& e) {
      throw UsageError(std::string("--thresholds: ") + e.what());
    }
  }
  if (!f.db.empty() && std::filesystem::exists(f.db)) RunStore::file_schema_version(f.db);  // refuse a foreign file now

  std::vector<quality::GateResult> results;
  if (is_npy(f.distribution)) {
    const numerics::NpyElementType type = parse_dtype(f.dtype);
    quality::ImportedKv dump;
    dump.file = f.distribution;
    dump.layer = f.layer;
    dump.keys = numerics::read_npy_kv(f.distribution, type);
    if (f.layer < 0 || f.layer >= dump.keys.layers)
      throw UsageError("--layer: " + std::to_string(f.layer) + " is out of range; " + f.distribution + " has " +
                       std::to_string(dump.keys.layers) + " layers");
    if (!f.values.empty()) dump.values = numerics::read_npy_kv(f.values, type);
    if (!f.bias.empty()) {
      dump.bias_file = f.bias;
      dump.bias = numerics::read_npy_kv_bias(f.bias, type);
    }
    for (const OperatingPoint& rep : representations(op, f.all)) {
      quality::GateSettings s = settings;
      s.op = rep;
      results.push_back(quality::evaluate_gate(dump, s));
    }
  } else {
    if (!f.values.empty() || !f.bias.empty())
      throw UsageError("--values and --bias go with an imported --distribution FILE.npy");
    quality::KeyModel keys;
    try {
      keys = quality::load_key_model(f.distribution, perf::models_dir());
    } catch (const std::exception& e) {
      throw UsageError(std::string("--distribution: ") + e.what());
    }
    if (f.dof != 0) {
      if (keys.kind != quality::KeyKind::student_t) throw UsageError("--dof goes with a Student-t distribution");
      if (!(f.dof > 2)) throw UsageError("--dof: must be > 2 (a finite variance)");
      keys.student_dof = f.dof;
    }
    for (const OperatingPoint& rep : representations(op, f.all)) {
      quality::GateSettings s = settings;
      s.op = rep;
      results.push_back(quality::evaluate_gate(keys, s));
    }
  }
  if (!f.db.empty()) store(f.db, results, context);

  if (f.json) {
    // The operating point's own representation at the top; every one under "representations".
    const quality::GateResult& first = results.front();
    nlohmann::json j = first.to_json();
    nlohmann::json metrics = nlohmann::json::object();
    const numerics::GateMetrics& m = first.metrics;
    metrics["rel_l2"] = m.rel_l2.worst;
    metrics["max_abs"] = m.max_abs.worst;
    metrics["kl"] = m.kl.worst;
    metrics["top8"] = m.top8.worst;
    metrics["top32"] = m.top32.worst;
    j["metrics_detail"] = j["metrics"];
    j["metrics"] = metrics;
    nlohmann::json all = nlohmann::json::array();
    for (const quality::GateResult& r : results) all.push_back(r.to_json());
    j["representations"] = all;
    if (!f.db.empty()) j["db"] = f.db;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    const OperatingPoint& o = results.front().settings.op;
    std::printf("gate on %s: B=%d S=%d Hq/Hk=%d/%d D=%d, seed %llu%s\n", results.front().distribution.c_str(), o.batch,
                o.context, o.q_heads, o.kv_heads, o.head_dim, static_cast<unsigned long long>(f.seed),
                f.steps > 0 ? (", " + std::to_string(f.steps) + " decode steps, scales " +
                               (settings.scales_from_prefix ? "from the prefix" : "per step"))
                                  .c_str()
                            : "");
    const numerics::GateThresholds& t = settings.thresholds;
    std::printf("thresholds: rel_l2 <= %s, kl <= %s, top8 >= %s, top32 >= %s (worst row; max_abs %s)\n\n",
                human_number(t.rel_l2).c_str(), human_number(t.kl).c_str(), human_number(t.top8).c_str(),
                human_number(t.top32).c_str(), std::isnan(t.max_abs) ? "not gated" : human_number(t.max_abs).c_str());
    std::printf("%-46s %-6s %9s %9s %9s %9s %7s %7s\n", "representation", "gate", "rel_l2", "(median)", "max_abs", "kl",
                "top8", "top32");
    for (const quality::GateResult& r : results) {
      const numerics::GateMetrics& m = r.metrics;
      std::printf("%-46s %-6s %9s %9s %9s %9s %7s %7s\n", r.representation.c_str(), r.verdict.passed ? "pass" : "FAIL",
                  human_number(m.rel_l2.worst).c_str(), human_number(m.rel_l2.median).c_str(),
                  human_number(m.max_abs.worst).c_str(), human_number(m.kl.worst).c_str(),
                  human_number(m.top8.worst, "%.3f").c_str(), human_number(m.top32.worst, "%.3f").c_str());
      for (const std::string& why : r.verdict.failures) std::printf("    %s\n", why.c_str());
    }
    std::printf(
        "\nrows: %zu of %d (every (request, kv head)); reference: float64 attention with the BF16 query and "
        "the unquantized keys and values\n",
        results.front().metrics.rows.size(), results.front().metrics.rows_total);
    if (!f.db.empty()) std::printf("stored in %s (backend 'gate')\n", f.db.c_str());
  }
  return results.front().verdict.passed ? kExitOk : kExitFailure;
}

}  // namespace

Command add_gate_command(CLI::App& app) {
  auto f = std::make_shared<GateFlags>();
  f->op.defaults.batch = 4;  // the gate checks every row in float64: a small batch by default
  CLI::App* sub = app.add_subcommand("gate", "Numerical gate: a cache representation against full-precision attention");
  sub->add_option("--distribution", f->distribution,
                  "keys: a models/keys id (gaussian, heavy_tailed, qwen_bias, projected, partial_rope) or FILE.npy "
                  "[tokens, kv_heads, head_dim] / [layers, ...] of post-RoPE keys")
      ->default_str("gaussian");
  sub->add_option("--values", f->values, "with FILE.npy: the values (same shape); Gaussian when absent");
  sub->add_option("--bias", f->bias, "with FILE.npy: the exact key bias [kv_heads, head_dim] (prebias)");
  sub->add_option("--dtype", f->dtype, "element type of the .npy files: float32, float16, bfloat16")
      ->default_str("float32");
  sub->add_option("--layer", f->layer, "layer of a 4-D .npy")->default_str("0");
  sub->add_option("--dof", f->dof, "Student-t degrees of freedom (heavy_tailed; > 2)");
  add_op_flags(sub, f->op, /*shape_required=*/false);
  sub->add_flag("--all", f->all, "also every other K representation (plain, prebias pre/post-RoPE, mxfp8) and K16/V8");
  sub->add_option("--steps", f->steps, "autoregressive decode steps after the context (0: one step)")->default_str("0");
  sub->add_option("--scales", f->scales, "with --steps: prefix (from the first context tokens) or per_step")
      ->default_str("prefix");
  sub->add_option("--thresholds", f->thresholds,
                  "JSON overriding the thresholds, e.g. '{\"rel_l2\": 0.05, \"kl\": null}'");
  add_seed_flag(sub, f->seed, "seed of the synthetic keys and queries", 1);
  sub->add_option("--db", f->db, "store the results (quality rows with distribution and thresholds)");
  sub->add_flag("--json", f->json, "print JSON");
  return {sub, [f](const CliContext& context) { return gate(*f, context); }};
}

}  // namespace tilepath::cli
