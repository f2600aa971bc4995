// `tilepath predict --gpu NAME`: model only. The cost model's per-tile stage costs
// go through the stage graph and the II model; prints the II breakdown.

#include <cmath>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/cli/cli_output.h"
#include "app/cli/command.h"
#include "app/cli/op_flags.h"
#include "core/ii_model.h"
#include "core/perf/cost_model.h"
#include "core/perf/gpu_model.h"
#include "core/stage_graph.h"

namespace tilepath::cli {
namespace {

struct PredictFlags {
  OpFlags op;
  std::string gpu = "h200";
  int buffer_depth = 2;
  bool json = false;
};

struct StageLine {
  Stage stage;
  std::string agent;  // "once" for once-per-step stages
  double cost_us;
  double slack_us;
};

std::vector<StageLine> stage_lines(const StageGraph& graph, const StageCosts& costs, const IIPrediction& p) {
  std::vector<StageLine> lines;
  for (Stage s : graph.stages()) {
    bool once = s == Stage::q_quant || s == Stage::combine;
    lines.push_back({s, once ? std::string("once") : std::string(to_string(graph.agent_of(s))), costs[s],
                     once ? NAN : p.slack_us[s]});
  }
  return lines;
}

int predict(const PredictFlags& f) {
  OperatingPoint op = build_operating_point(f.op);
  if (f.buffer_depth < 1) throw UsageError("--buffer-depth must be >= 1");
  perf::GpuModel gpu;
  try {
    gpu = perf::load_gpu_model(f.gpu);
  } catch (const std::exception& e) {
    throw UsageError(std::string("--gpu: ") + e.what());
  }
  perf::CostEstimate est = perf::estimate_costs(op, gpu);
  if (!est.supported)
    throw std::runtime_error(gpu.id + " cannot run " + op.variant_label() + ": " + est.why_unsupported);

  StageGraph graph = StageGraph::build(op, f.buffer_depth);
  // A stage the model gives no cost stays unknown: predict_ii counts it as 0 and lists it.
  const StageCosts& costs = est.per_tile_us;
  IIPrediction p = predict_ii(graph, costs);
  double floor_fraction = est.latency_us > 0 ? est.floor_us / est.latency_us : NAN;
  std::vector<StageLine> lines = stage_lines(graph, costs, p);

  if (f.json) {
    nlohmann::json stages = nlohmann::json::array();
    for (const StageLine& l : lines)
      stages.push_back(
          {{"stage", std::string(to_string(l.stage))},
           {"agent", l.agent},
           {"cost_us", std::isfinite(l.cost_us) ? nlohmann::json(l.cost_us) : nlohmann::json(nullptr)},
           {"slack_us", std::isfinite(l.slack_us) ? nlohmann::json(l.slack_us) : nlohmann::json(nullptr)}});
    nlohmann::json j = {
        {"gpu", gpu.id},
        {"gpu_name", gpu.name},
        {"op", to_json(op)},
        {"variant", op.variant_label()},
        {"mma", std::string(to_string(op.mma))},
        {"tile_tokens", est.tile_tokens},
        {"tiles_per_cta", est.tiles_per_cta},
        {"ctas", est.ctas},
        {"splits", est.splits},
        {"stages", stages},
        {"ii_us", p.ii_us},
        {"limiting_stage", std::string(to_string(p.limiting_stage))},
        {"limiting_agent", std::string(to_string(p.limiting_agent))},
        {"latency_us", est.latency_us},
        {"bytes_moved", est.bytes_moved},
        {"floor_us", est.floor_us},
        {"floor_fraction", std::isfinite(floor_fraction) ? nlohmann::json(floor_fraction) : nlohmann::json(nullptr)},
        {"read_bandwidth_gbps", gpu.read_bandwidth_gbps},
        {"prediction", p.to_json()},
        {"notes", est.notes}};
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }

  std::printf("%s on %s (%s), model only\n", describe_case(op).c_str(), gpu.id.c_str(), gpu.name.c_str());
  std::printf("matrix instruction %s\n", std::string(to_string(op.mma)).c_str());
  std::printf("tile %d tokens, %lld tiles per CTA, %d CTAs, %d split(s)\n\n", est.tile_tokens, est.tiles_per_cta,
              est.ctas, est.splits);
  std::printf("%-10s %-10s %14s %10s\n", "stage", "agent", "cost/tile us", "slack us");
  for (const StageLine& l : lines)
    std::printf("%-10s %-10s %14s %10s%s\n", std::string(to_string(l.stage)).c_str(), l.agent.c_str(),
                human_number(l.cost_us).c_str(), human_number(l.slack_us).c_str(),
                l.stage == p.limiting_stage ? "  <- limiting" : "");
  std::printf("\nII                 %s us per tile\n", human_number(p.ii_us).c_str());
  std::printf("limiting stage     %s on agent %s\n", std::string(to_string(p.limiting_stage)).c_str(),
              std::string(to_string(p.limiting_agent)).c_str());
  std::printf("predicted latency  %s us\n", human_number(est.latency_us).c_str());
  std::printf("byte floor         %s us (%s bytes at %s GB/s), floor fraction %s\n", human_number(est.floor_us).c_str(),
              human_number(est.bytes_moved).c_str(), human_number(gpu.read_bandwidth_gbps).c_str(),
              human_number(floor_fraction).c_str());
  if (!est.notes.empty()) std::printf("notes              %s\n", est.notes.c_str());
  return kExitOk;
}

}  // namespace

Command add_predict_command(CLI::App& app) {
  auto f = std::make_shared<PredictFlags>();
  CLI::App* sub = app.add_subcommand("predict", "Model-only II breakdown for an operating point on a modelled GPU");
  sub->add_option("--gpu", f->gpu, "GPU model id (models/gpus: h100_sxm, h200, b200, mi300x)")->default_str("h200");
  sub->add_option("--buffer-depth", f->buffer_depth, "shared-memory ring stages")->default_str("2");
  add_op_flags(sub, f->op, /*shape_required=*/false);
  sub->add_flag("--json", f->json, "print JSON");
  return {sub, [f](const CliContext&) { return predict(*f); }};
}

}  // namespace tilepath::cli
