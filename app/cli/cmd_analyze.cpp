// `tilepath analyze --db FILE <operating-point flags>`: what the stage model says about
// the stored case of one operating point (core/analysis): the chosen stage costs with
// their sources, predicted and measured II, the limiting stage, slack, unknown stages,
// and the break-even against K16/V8 with the V hidden fraction against K16/V16.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/cli/cli_output.h"
#include "app/cli/command.h"
#include "app/cli/op_flags.h"
#include "app/cli/output_file.h"
#include "core/analysis/break_even_analysis.h"
#include "core/analysis/case_analysis.h"
#include "core/analysis/case_match.h"
#include "core/analysis/kernel_ii_model.h"
#include "core/store/run_store.h"

namespace tilepath::cli {
namespace {

struct AnalyzeFlags {
  std::string db, backend, device;
  OpFlags op;
  bool json = false;
};

std::string stage_list(const std::vector<Stage>& stages) {
  std::string out;
  for (Stage s : stages) out += (out.empty() ? "" : ", ") + std::string(to_string(s));
  return out;
}

// The stored cases that can matter: the operating point's shape in every variant.
std::vector<CaseSummary> cases_at_shape(const RunStore& store, const OperatingPoint& op) {
  CaseFilter filter;
  filter.batch = op.batch;
  filter.context = op.context;
  filter.head_dim = op.head_dim;
  filter.cache = std::string(to_string(op.cache));
  filter.status = CaseStatus::ok;
  return store.cases(filter);
}

CaseSummary pick_case(const std::vector<CaseSummary>& cases, const OperatingPoint& op, const AnalyzeFlags& f) {
  const analysis::CaseScope scope{f.backend, f.device};
  std::vector<analysis::CaseScope> scopes;
  for (const analysis::CaseScope& s : analysis::scopes_measuring(cases, op))
    if ((scope.backend.empty() || s.backend == scope.backend) && (scope.device.empty() || s.device == scope.device))
      scopes.push_back(s);
  if (scopes.empty())
    throw std::runtime_error(
        f.db + ": no ok case measures " + describe_case(op) + (f.backend.empty() ? "" : " on backend " + f.backend) +
        " (a case must equal the operating point in every field; list what is stored with "
        "`tilepath report --db " +
        f.db + " --batch " + std::to_string(op.batch) + " --context " + std::to_string(op.context) + "`)");
  if (scopes.size() > 1) {
    std::string choices;
    for (const analysis::CaseScope& s : scopes)
      choices += (choices.empty() ? "" : "; ") + std::string("--backend ") + s.backend + " --device '" + s.device + "'";
    throw UsageError("several backends or devices measured " + describe_case(op) + "; choose one: " + choices);
  }
  return *analysis::find_stored_case(cases, op, scopes.front());
}

// The kernel II model of a cuda case with isolated stage costs (core/analysis/kernel_ii_model.h).
std::optional<analysis::KernelIIPrediction> kernel_ii_of(const CaseSummary& c) {
  if (c.backend != "cuda") return std::nullopt;
  return analysis::predict_kernel_ii(c.record);
}

void print_kernel_ii(const analysis::KernelIIPrediction& k) {
  const std::string lower_bound =
      k.missing.empty() ? "" : " (a lower bound: no isolated " + stage_list(k.missing) + ")";
  std::printf("kernel II       %s us per tile, %s us per 1k tokens%s\n", human_number(k.ii_us).c_str(),
              human_number(k.ii_per_1k_tokens_us).c_str(), lower_bound.c_str());
  const analysis::KernelIILimit l = analysis::describe_limit(k);
  const std::string limit = l.how.empty() ? l.what : l.what + " (" + l.how + ")";
  std::printf("  limit         %s on %s, resource %s\n", limit.c_str(),
              std::string(analysis::to_string(k.limiting_agent)).c_str(), k.resource.c_str());
  for (int a = 0; a < analysis::kKernelAgentCount; ++a) {
    if (!k.present[a]) continue;
    std::string busy = std::isfinite(k.busy_us[a]) ? human_number(k.busy_us[a]) + " us per tile"
                                                   : std::string("unknown (no isolated cost of its stages)");
    if (a == static_cast<int>(analysis::KernelAgent::mma_warps) && k.compute_source == "compute_only")
      busy += " (measured whole by the compute_only kernel; its isolated stages sum to " +
              (std::isfinite(k.compute_isolated_sum_us) ? human_number(k.compute_isolated_sum_us) + " us)"
                                                        : std::string("- : none measured)"));
    std::printf("  %-13s %s\n", std::string(analysis::to_string(analysis::KernelAgent(a))).c_str(), busy.c_str());
  }
  std::printf("  unexplained   %s us per tile (measured minus kernel II)\n", human_number(k.unexplained_us).c_str());
}

void print_text(const CaseSummary& c, const analysis::CaseAnalysis& a,
                const std::optional<analysis::BreakEvenAnalysis>& b) {
  const std::optional<analysis::KernelIIPrediction> kernel = kernel_ii_of(c);
  // Two limits can differ: the design note's agents run qk, softmax and pv apart, where our
  // kernel (a wgmma kernel's one consumer warpgroup) runs them in turn and its ring is measured
  // whole; the kernel II model marks what limits our kernel.
  const auto marks = [&](Stage s) {
    std::string m;
    if (a.prediction && s == a.prediction->limiting_stage) m += "  <- limiting";
    if (kernel && std::ranges::find(kernel->limit_stages, s) != kernel->limit_stages.end())
      m += kernel->missing.empty() ? "  <- limits the kernel" : "  <- limits the kernel (its II a lower bound)";
    return m;
  };
  std::printf("case            #%lld %s on %s: %s\n", static_cast<long long>(c.case_id), c.backend.c_str(),
              c.device.c_str(), describe_case(a.op).c_str());
  std::printf("matrix instr.   %s\n", std::string(to_string(a.op.mma)).c_str());
  std::printf("tile            %s tokens\n", a.tile_tokens > 0 ? std::to_string(a.tile_tokens).c_str() : "-");
  std::printf("\n%-10s %-14s %14s  %-9s %10s\n", "stage", "agent", "cost us/tile", "source", "slack us");
  for (Stage s : a.graph.stages()) {
    const bool once = s == Stage::q_quant || s == Stage::combine;
    const std::string cost = a.costs.known(s) ? human_number(a.costs.us[s]) : std::string("unknown");
    const double slack = a.prediction && !once ? a.prediction->slack_us[s] : NAN;
    std::printf("%-10s %-14s %14s  %-9s %10s%s\n", std::string(to_string(s)).c_str(),
                once ? "once per step" : std::string(to_string(a.graph.agent_of(s))).c_str(), cost.c_str(),
                std::string(analysis::to_string(a.costs.source_of(s))).c_str(), human_number(slack).c_str(),
                marks(s).c_str());
  }
  std::printf("\n");
  if (a.prediction) {
    std::printf("predicted II    %s us per tile%s\n", human_number(a.prediction->ii_us).c_str(),
                a.ii_is_lower_bound() ? " (a lower bound: unknown stages count as 0)" : "");
    std::printf("limiting        %s on agent %s\n", std::string(to_string(a.prediction->limiting_stage)).c_str(),
                std::string(to_string(a.prediction->limiting_agent)).c_str());
  } else {
    std::printf("predicted II    - (no stage costs stored)\n");
  }
  std::printf("measured II     %s us per tile\n", human_number(a.measured_ii_us).c_str());
  if (kernel) print_kernel_ii(*kernel);
  std::printf("unknown stages  %s\n", a.unknown_stages().empty() ? "none" : stage_list(a.unknown_stages()).c_str());
  if (!b) {
    std::printf("break-even      - (no K16/V8 case of this shape, backend and device is stored)\n");
    return;
  }
  const std::string unit = b->unit == "us_per_1k_tokens" ? "us per 1k tokens" : "us per tile";
  std::printf("\nbreak-even against K16/V8 case #%lld (%s)\n", static_cast<long long>(b->k16v8_case_id),
              b->k16v8_variant.c_str());
  std::printf("  latency       K8/V8 %s us, K16/V8 %s us (difference %s us)\n", human_number(b->t_k8v8_us).c_str(),
              human_number(b->t_k16v8_us).c_str(), human_number(b->t_k8v8_us - b->t_k16v8_us).c_str());
  std::printf("  II            K8/V8 %s, K16/V8 %s %s (%s)\n", human_number(b->ii_k8v8_us).c_str(),
              human_number(b->ii_k16v8_us).c_str(), unit.c_str(), b->ii_source.c_str());
  if (b->decomposition) {
    const BreakEven& d = *b->decomposition;
    std::printf("  delta         %s = unhidden K8 prep %s + pipeline penalty %s - extra K16 HBM %s (%s)\n",
                human_number(d.delta_us).c_str(), human_number(d.unhidden_k8_prep_us).c_str(),
                human_number(d.pipeline_penalty_us).c_str(), human_number(d.extra_k16_hbm_us).c_str(), unit.c_str());
  } else {
    std::printf("  delta         - (%s)\n", b->decomposition_note.c_str());
  }
  if (b->k16v16_case_id > 0)
    std::printf("  V hidden      %s (against K16/V16 case #%lld)\n", human_number(b->v_hidden_fraction).c_str(),
                static_cast<long long>(b->k16v16_case_id));
  else
    std::printf("  V hidden      - (no K16/V16 case of this shape is stored)\n");
}

int analyze(const AnalyzeFlags& f) {
  const OperatingPoint op = build_operating_point(f.op);
  require_existing(f.db, "--db");
  const RunStore store = RunStore::open_read_only(f.db);
  const std::vector<CaseSummary> cases = cases_at_shape(store, op);
  const CaseSummary c = pick_case(cases, op, f);
  const analysis::CaseAnalysis a = analysis::analyze_case(c.record);
  const std::optional<analysis::BreakEvenAnalysis> b =
      op.kv == KvDtype::k8v8 ? analysis::break_even_for(c, cases) : std::nullopt;

  if (f.json) {
    nlohmann::json j = a.to_json();
    j["db"] = f.db;
    j["case_id"] = c.case_id;
    j["backend"] = c.backend;
    j["device"] = c.device;
    j["break_even"] = b ? b->to_json() : nlohmann::json(nullptr);
    const auto k = kernel_ii_of(c);
    j["kernel_ii"] = k ? k->to_json() : nlohmann::json(nullptr);
    if (!b)
      j["break_even_note"] = op.kv == KvDtype::k8v8 ? "no K16/V8 case of this shape, backend and device is stored"
                                                    : "the break-even compares a K8/V8 case with K16/V8";
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_text(c, a, b);
  }
  return kExitOk;
}

}  // namespace

Command add_analyze_command(CLI::App& app) {
  auto f = std::make_shared<AnalyzeFlags>();
  CLI::App* sub = app.add_subcommand(
      "analyze", "Stage costs, predicted vs measured II and the break-even of the stored case of an operating point");
  sub->add_option("--db", f->db, "database (opened read-only)")->required();
  sub->add_option("--backend", f->backend, "only cases of this backend (needed when several measured the point)");
  sub->add_option("--device", f->device, "only cases of this device name");
  add_op_flags(sub, f->op, /*shape_required=*/false);
  sub->add_flag("--json", f->json, "print JSON");
  return {sub, [f](const CliContext&) { return analyze(*f); }};
}

}  // namespace tilepath::cli
