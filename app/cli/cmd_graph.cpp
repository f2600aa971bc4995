// `tilepath graph`: the stage graph of a variant as Graphviz DOT or JSON.

#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/cli/command.h"
#include "app/cli/op_flags.h"
#include "core/stage_graph.h"

namespace tilepath::cli {
namespace {

struct GraphFlags {
  OpFlags op;
  std::string format = "dot";
  int buffer_depth = 2;
  bool json = false;
};

int graph(const GraphFlags& f) {
  if (f.format != "dot" && f.format != "json")
    throw UsageError("--format: unknown '" + f.format + "'; allowed: dot, json");
  if (f.buffer_depth < 1) throw UsageError("--buffer-depth must be >= 1");
  OperatingPoint op = build_operating_point(f.op);
  StageGraph g = StageGraph::build(op, f.buffer_depth);
  if (f.json || f.format == "json")
    std::printf("%s\n", g.to_json().dump(2).c_str());
  else
    std::printf("%s", g.to_dot().c_str());
  return kExitOk;
}

}  // namespace

Command add_graph_command(CLI::App& app) {
  auto f = std::make_shared<GraphFlags>();
  CLI::App* sub = app.add_subcommand("graph", "Print the stage graph of a variant (dot or json)");
  sub->add_option("--format", f->format, "dot, json")->default_str("dot");
  sub->add_option("--buffer-depth", f->buffer_depth, "shared-memory ring stages")->default_str("2");
  add_op_flags(sub, f->op, /*shape_required=*/false);
  sub->add_flag("--json", f->json, "same as --format json");
  return {sub, [f](const CliContext&) { return graph(*f); }};
}

}  // namespace tilepath::cli
