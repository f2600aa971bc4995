// `tilepath run`: one case through a backend into the database, with a summary.

#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "app/cli/backend_choice.h"
#include "app/cli/cancel_signal.h"
#include "app/cli/cli_output.h"
#include "app/cli/command.h"
#include "app/cli/ncu_profile.h"
#include "app/cli/op_flags.h"
#include "app/cli/record_json.h"
#include "app/cli/seed_flag.h"
#include "core/analysis/gate_table.h"
#include "core/case_runner.h"
#include "core/numerics/decode_problem.h"
#include "core/store/run_store.h"

namespace tilepath::cli {
namespace {

struct RunFlags {
  OpFlags op;
  std::string backend, db, gpu = "h200", save_tensors, keys = "gaussian";
  int device = 0, repeats = 20, warmup = 5;
  std::uint64_t seed = 0;
  bool no_ablations = false, json = false, profile = false;
};

double measured(const CaseRecord& rec, const char* name) { return rec.measurement(name).value_or(NAN); }

void print_summary(const CaseRecord& rec, const RunInfo& run, const std::string& db) {
  std::printf("case            %s\n", describe_case(rec.op).c_str());
  std::printf("backend         %s on %s%s\n", run.backend.c_str(), run.device.c_str(),
              run.device_uid.empty() ? "" : (" (" + run.device_uid + ")").c_str());
  std::printf("status          %s%s%s%s\n", std::string(to_string(rec.status)).c_str(), rec.message.empty() ? "" : " (",
              rec.message.c_str(), rec.message.empty() ? "" : ")");
  std::printf("latency         %s us (min %s, max %s)\n", human_number(measured(rec, "latency_us")).c_str(),
              human_number(measured(rec, "latency_min_us")).c_str(),
              human_number(measured(rec, "latency_max_us")).c_str());
  std::printf("tile interval   %s us (measured)\n", human_number(measured(rec, "tile_interval_us")).c_str());
  if (!rec.predictions.empty()) {
    const PredictionRow& p = rec.predictions.front();
    std::printf("predicted II    %s us\n", human_number(p.ii_us).c_str());
    std::printf("limiting stage  %s (agent %s)\n", p.limiting_stage.c_str(), p.limiting_agent.c_str());
    std::printf("overlap eff.    %s\n", human_number(p.overlap_efficiency).c_str());
  } else {
    std::printf("predicted II    - (no stage costs)\n");
    std::printf("limiting stage  -\n");
  }
  std::printf("floor fraction  %s (bytes moved %s at %s GB/s)\n", human_number(measured(rec, "floor_fraction")).c_str(),
              human_number(measured(rec, "bytes_moved")).c_str(),
              human_number(measured(rec, "read_bandwidth_gbps")).c_str());
  // Backends that time the read kernel over the case's own bytes (cuda): how close to a
  // perfect stream of this size, whose launch and ramp the floor does not count.
  if (const double stream_us = measured(rec, "stream_same_bytes_us"); std::isfinite(stream_us))
    std::printf("of a stream     %s (the read kernel alone over the same bytes: %s us)\n",
                human_number(measured(rec, "stream_same_bytes_fraction")).c_str(), human_number(stream_us).c_str());
  // The kernel check (against an emulation of the kernel's own arithmetic) has a
  // tolerance; the gate (against full precision) has thresholds (docs/gate.md).
  std::string gate_keys;
  for (const QualityRow& q : rec.quality) {
    const bool gate = analysis::is_gate_row(q);
    if (gate) gate_keys = q.distribution;
    constexpr std::string_view kCheck = "kernel_check_";
    const std::string name = gate                           ? "gate " + q.metric
                             : q.metric.starts_with(kCheck) ? "check " + q.metric.substr(kCheck.size())
                                                            : q.metric;
    const std::string bound = gate ? " (threshold " : " (tolerance ";
    std::printf("%-15s %s%s\n", name.c_str(), human_number(q.value).c_str(),
                std::isfinite(q.threshold)
                    ? (bound + human_number(q.threshold) + (q.passed ? ", passed)" : ", FAILED)")).c_str()
                    : "");
  }
  if (!gate_keys.empty())
    std::printf("gate rows       %s of %s (request, kv head) rows on %s keys, against full-precision attention\n",
                human_number(measured(rec, "gate_rows_checked")).c_str(),
                human_number(measured(rec, "gate_rows_total")).c_str(), gate_keys.c_str());
  if (!rec.kernel.kernel_name.empty()) std::printf("kernel          %s\n", rec.kernel.kernel_name.c_str());
  // A profile of this process (ncu's output carries these lines) names the build it ran, so
  // `tilepath attach` can refuse to put it on a case another build measured.
  if (!rec.kernel.cubin_sha256.empty()) std::printf("cubin           %s\n", rec.kernel.cubin_sha256.c_str());
  std::printf("stored          case %lld of run %s in %s\n", static_cast<long long>(rec.id), run.uuid.c_str(),
              db.c_str());
}

int exit_code(CaseStatus s) {
  switch (s) {
    case CaseStatus::ok:
      return kExitOk;
    case CaseStatus::cancelled:
      return kExitCancelled;
    default:
      return kExitFailure;
  }
}

int run_one(const RunFlags& f, const CliContext& context) {
  // Everything the user typed is checked before any file is touched.
  OperatingPoint op = build_operating_point(f.op);
  if (f.repeats < 1 || f.repeats > kMaxLaunches)
    throw UsageError("--repeats: " + std::to_string(f.repeats) + " is out of range; allowed: 1.." +
                     std::to_string(kMaxLaunches));
  if (f.warmup < 0 || f.warmup > kMaxLaunches)
    throw UsageError("--warmup: " + std::to_string(f.warmup) + " is out of range; allowed: 0.." +
                     std::to_string(kMaxLaunches));
  const numerics::KeyDistribution keys = numerics::parse_key_distribution(f.keys, "--keys");
  PluginHost host;
  host.discover();
  const Backend& backend = choose_backend(host, f.backend, f.device);

  RunSettings settings;
  settings.device = f.device;
  settings.repeats = f.repeats;
  settings.warmup = f.warmup;
  settings.seed = f.seed;
  settings.key_distribution = std::string(numerics::to_string(keys));
  settings.gpu_model = f.gpu;
  settings.save_tensors_dir = f.save_tensors;
  settings.stage_costs = settings.tile_interval = !f.no_ablations;

  // Interrupted while loading: stop before the database is created or touched.
  if (cancel_flag().load()) return kExitCancelled;
  RunStore store = RunStore::open(f.db);
  RunInfo run = make_run_info(backend, settings, context.command_line);
  store.begin_run(run);
  CaseRecord rec = run_case(backend, op, settings, nullptr, &cancel_flag());
  if (rec.status != CaseStatus::cancelled) store.add_case(run.id, rec);
  store.finish_run(run.id);

  if (rec.status == CaseStatus::cancelled) {
    print_error("tilepath run", "cancelled; nothing stored");
    return kExitCancelled;
  }
  std::optional<ProfileOutcome> profile;
  if (f.profile) {
    // The same seed (0: fresh inputs, as the case had): the profiled counters do not depend on the values.
    profile = profile_case(store, rec, {f.backend, f.device, std::string(numerics::to_string(keys)), f.seed});
    if (profile->ran) rec = store.load_case(rec.id);  // with the ncu_* measurements
  }
  if (f.json) {
    nlohmann::json j = case_record_json(rec);
    j["run_uuid"] = run.uuid;
    j["backend"] = run.backend;
    j["device"] = run.device;
    j["device_uid"] = run.device_uid;
    j["db"] = f.db;
    if (profile) j["profile"] = {{"ran", profile->ran}, {"why", profile->why}, {"artifact", profile->artifact}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_summary(rec, run, f.db);
    if (profile && profile->ran)
      std::printf("profile         ncu: %d ncu_* measurements stored, raw CSV kept as artifact %s\n",
                  profile->measurements, profile->artifact.c_str());
    else if (profile)
      std::printf("profile         skipped: %s\n", profile->why.c_str());
  }
  return exit_code(rec.status);
}

}  // namespace

Command add_run_command(CLI::App& app) {
  auto f = std::make_shared<RunFlags>();
  CLI::App* sub = app.add_subcommand("run", "Run one case on a backend and store it");
  sub->add_option("--backend", f->backend, "backend plugin name (see `tilepath backends`)")->required();
  sub->add_option("--device", f->device, "device index")->default_str("0");
  sub->add_option("--db", f->db, "SQLite run database (created if absent)")->required();
  add_op_flags(sub, f->op, /*shape_required=*/true);
  sub->add_option("--repeats", f->repeats, "timed launches; the median is reported")->default_str("20");
  sub->add_option("--warmup", f->warmup, "warm-up launches")->default_str("5");
  add_seed_flag(sub, f->seed, "RNG seed of the random inputs (0 = fresh)", 0);
  sub->add_option("--keys", f->keys,
                  "key distribution of the inputs (gaussian|heavy_tailed|qwen_bias): the gate on the case's own "
                  "inputs measures it")
      ->default_str("gaussian");
  sub->add_option("--gpu", f->gpu, "GPU model for simulating backends (models/gpus)")->default_str("h200");
  sub->add_option("--save-tensors", f->save_tensors, "write inputs and output as .npy + manifest.json into DIR");
  sub->add_flag("--no-ablations", f->no_ablations, "skip stage-cost ablations and the tile-interval measurement");
  sub->add_flag("--profile", f->profile,
                "cuda: run the case's main kernel once more under ncu (--clock-control none, when ncu is on PATH) and "
                "store what it measured with the case, the raw CSV as an artifact");
  sub->add_flag("--json", f->json, "print the stored case as JSON");
  return {sub, [f](const CliContext& context) { return run_one(*f, context); }};
}

}  // namespace tilepath::cli
