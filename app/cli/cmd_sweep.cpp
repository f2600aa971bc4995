// `tilepath sweep SPEC.json`: a resumable cartesian sweep into the database.

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/cli/backend_choice.h"
#include "app/cli/cancel_signal.h"
#include "app/cli/cli_output.h"
#include "app/cli/command.h"
#include "app/cli/ncu_profile.h"
#include "app/cli/op_flags.h"
#include "app/cli/progress_bar.h"
#include "core/run/worker_pool.h"
#include "core/sweep.h"

namespace tilepath::cli {
namespace {

struct SweepFlags {
  std::string spec, backend, db, devices, shard;
  bool json = false, dry_run = false, profile = false, in_process = false;
  std::int64_t max_cases = kDefaultMaxSweepCases;
  double case_timeout_s = 1800;
};

// "all" or a comma-separated list of distinct device indices of the backend.
std::vector<int> parse_devices(const std::string& text, const Backend& backend) {
  const int count = static_cast<int>(backend.devices().size());
  std::vector<int> out;
  if (text == "all") {
    for (int d = 0; d < count; ++d) out.push_back(d);
    return out;
  }
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const bool digits = !item.empty() && item.size() <= 4 && item.find_first_not_of("0123456789") == std::string::npos;
    const int d = digits ? std::stoi(item) : -1;
    if (d < 0 || d >= count || std::find(out.begin(), out.end(), d) != out.end())
      throw UsageError("--devices: '" + item + "' is not a distinct device of backend " + backend.name() +
                       "; allowed: all, or indices 0.." + std::to_string(count - 1) + " separated by commas");
    out.push_back(d);
    at = comma + 1;
  }
  return out;
}

// "I/N" with 0 <= I < N.
std::pair<int, int> parse_shard(const std::string& text) {
  const std::size_t slash = text.find('/');
  const auto number = [](const std::string& t) {
    return !t.empty() && t.size() <= 6 && t.find_first_not_of("0123456789") == std::string::npos ? std::stoi(t) : -1;
  };
  const int i = slash == std::string::npos ? -1 : number(text.substr(0, slash));
  const int n = slash == std::string::npos ? -1 : number(text.substr(slash + 1));
  if (i < 0 || n < 1 || i >= n)
    throw UsageError("--shard: '" + text + "' is not I/N; allowed: I/N with 0 <= I < N (e.g. 0/4 .. 3/4)");
  return {i, n};
}

SweepSpec load_spec(const std::string& path, std::int64_t max_cases) {
  try {
    return load_sweep_spec(path, max_cases);
  } catch (const ValidationError& e) {
    // Name the file unless the error already starts with it (unreadable, malformed JSON).
    if (e.field() == path) throw;
    throw UsageError(path + ": " + e.what());
  }
}

// A resume with nothing left to run must leave the file byte-identical: read-only then,
// read-write (creating or upgrading the file) only when a case will be stored.
RunStore open_for_sweep(const std::string& db, const SweepSpec& spec, const Backend& backend) {
  std::error_code ec;
  if (std::filesystem::file_size(db, ec) > 0 && !ec) {
    try {
      if (RunStore::file_schema_version(db) >= RunStore::oldest_schema_read_as_is()) {
        RunStore existing = RunStore::open_read_only(db);
        if (sweep_cases_to_run(spec, backend, existing) == 0) return existing;
      }
    } catch (const StoreError&) {
      // Opening it read-write below reports the file's problem (or upgrades it).
    }
  }
  return RunStore::open(db);
}

int run_sweep_command(const SweepFlags& f, const CliContext& context) {
  // Parse and choose everything before the database file is created.
  if (f.max_cases < 1) throw UsageError("--max-cases must be >= 1");
  SweepSpec spec = load_spec(f.spec, f.max_cases);
  std::string backend_name = f.backend.empty() ? spec.backend : f.backend;
  if (backend_name.empty()) throw UsageError("no backend: give --backend NAME or \"backend\" in " + f.spec);
  if (!f.dry_run && f.db.empty()) throw UsageError("--db is required");
  if (f.dry_run) {
    std::printf("%s: %zu cases (%d invalid combinations skipped) on backend %s\n", spec.name.c_str(), spec.cases.size(),
                spec.skipped_invalid, backend_name.c_str());
    return kExitOk;
  }
  const auto [shard, shards] = f.shard.empty() ? std::pair{0, 1} : parse_shard(f.shard);
  if (!(f.case_timeout_s > 0)) throw UsageError("--case-timeout must be > 0 seconds");
  PluginHost host;
  host.discover();
  const Backend& backend = choose_backend(host, backend_name, spec.settings.device);
  const std::vector<int> devices =
      f.devices.empty() ? std::vector<int>{spec.settings.device} : parse_devices(f.devices, backend);
  if (f.in_process && (devices.size() > 1 || shards > 1))
    throw UsageError("--in-process runs one device and the whole spec; drop --devices/--shard or --in-process");
  SweepSpec this_shard = spec;  // what this process runs
  this_shard.cases.clear();
  for (int i : shard_indices(static_cast<int>(spec.cases.size()), shard, shards))
    this_shard.cases.push_back(spec.cases[static_cast<std::size_t>(i)]);
  // Interrupted while loading: stop before the database is created or touched.
  if (cancel_flag().load()) return kExitCancelled;
  RunStore store = open_for_sweep(f.db, this_shard, backend);
  SweepOutcome outcome;
  std::vector<std::int64_t> run_ids;
  std::vector<PoisonCase> poison;
  int restarts = 0;
  {
    ProgressBar bar(static_cast<int>(this_shard.cases.size()), &cancel_flag());
    if (f.in_process) {
      outcome = run_sweep(spec, backend, store, context.command_line, &bar, &cancel_flag());
      if (outcome.run_id > 0) run_ids.push_back(outcome.run_id);
    } else {
      WorkerSweepOptions o;
      o.worker_program = running_program_path();  // this tilepath, as `tilepath worker`
      o.db = f.db;
      o.devices = devices;
      o.case_timeout_s = f.case_timeout_s;
      o.shard = shard;
      o.shards = shards;
      o.command_line = context.command_line;
      WorkerSweepOutcome w = run_sweep_in_workers(spec, backend, store, o, &bar, &cancel_flag());
      outcome = w.sweep;
      run_ids = w.run_ids;
      poison = w.poison;
      restarts = w.worker_restarts;
    }
    bar.finish();
  }

  // --profile: every ok case this sweep ran, once more under ncu (app/cli/ncu_profile.h).
  int profiled = 0;
  std::string profile_skipped;
  if (f.profile && !run_ids.empty()) {
    std::vector<CaseSummary> ran;
    for (std::int64_t id : run_ids) {
      CaseFilter filter;
      filter.run_id = id;
      filter.status = CaseStatus::ok;
      for (CaseSummary& c : store.cases(filter)) ran.push_back(std::move(c));
    }
    for (std::size_t i = 0; i < ran.size() && !cancel_flag().load(); ++i) {
      const ProfileOutcome p =
          profile_case(store, ran[i].record, {backend.name(), spec.settings.device, spec.settings.key_distribution, 0});
      if (!p.ran) {
        profile_skipped = p.why;
        break;
      }
      ++profiled;
      if (!f.json) std::printf("profiled %zu/%zu  %s\n", i + 1, ran.size(), describe_case(ran[i].record.op).c_str());
    }
  }

  if (f.json) {
    nlohmann::json j = {{"spec", spec.name},
                        {"backend", backend.name()},
                        {"db", f.db},
                        {"total", outcome.total},
                        {"ran", outcome.ran},
                        {"skipped_existing", outcome.skipped_existing},
                        {"failed", outcome.failed},
                        {"unsupported", outcome.unsupported},
                        {"cancelled", outcome.cancelled},
                        {"run_id", outcome.run_id},
                        {"run_ids", run_ids},
                        {"devices", devices},
                        {"shard", std::to_string(shard) + "/" + std::to_string(shards)},
                        {"worker_restarts", restarts},
                        {"skipped_invalid", spec.skipped_invalid}};
    j["poison"] = nlohmann::json::array();
    for (const PoisonCase& p : poison) j["poison"].push_back({{"case", p.label}, {"why", p.why}});
    if (f.profile) j["profile"] = {{"profiled", profiled}, {"skipped", profile_skipped}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("sweep %s on %s: %d cases, %d run, %d already stored, %d failed, %d unsupported%s -> %s\n",
                spec.name.c_str(), backend.name().c_str(), outcome.total, outcome.ran, outcome.skipped_existing,
                outcome.failed, outcome.unsupported, outcome.cancelled ? ", CANCELLED (rerun to resume)" : "",
                f.db.c_str());
    if (f.profile && !profile_skipped.empty()) std::printf("profile skipped: %s\n", profile_skipped.c_str());
    if (restarts > 0) std::printf("workers restarted %d time(s)\n", restarts);
    for (const PoisonCase& p : poison)
      std::printf("poison (stored as failed): %s: %s\n", p.label.c_str(), p.why.c_str());
  }
  return outcome.cancelled ? kExitCancelled : kExitOk;
}

}  // namespace

Command add_sweep_command(CLI::App& app) {
  auto f = std::make_shared<SweepFlags>();
  CLI::App* sub = app.add_subcommand("sweep", "Run a cartesian sweep spec (docs/sweep-spec.md); resumable");
  sub->add_option("spec", f->spec, "sweep spec JSON file")->required();
  sub->add_option("--backend", f->backend, "backend plugin (overrides the spec's \"backend\")");
  sub->add_option("--db", f->db, "SQLite run database (created if absent); required unless --dry-run");
  sub->add_flag("--json", f->json, "print the outcome as JSON");
  sub->add_option("--max-cases", f->max_cases, "refuse a spec whose axes expand to more combinations than N")
      ->default_str(std::to_string(kDefaultMaxSweepCases));
  sub->add_flag("--dry-run", f->dry_run, "parse and expand the spec, print the case count, run nothing");
  sub->add_option("--devices", f->devices,
                  "all, or device indices separated by commas: one worker process each, on one database (default: "
                  "the spec's settings.device)");
  sub->add_option("--shard", f->shard,
                  "I/N: run only the cases whose index in the expanded spec is I mod N (one part of a job array; "
                  "tilepath merge unites the parts)");
  sub->add_option("--case-timeout", f->case_timeout_s,
                  "seconds a case may run before its worker is killed and the case retried once, then stored as "
                  "failed")
      ->default_str("1800");
  sub->add_flag("--in-process", f->in_process,
                "run the plugin in this process instead of a worker (one device, whole spec; a plugin crash ends "
                "the sweep)");
  sub->add_flag("--profile", f->profile,
                "cuda: afterwards, every ok case the sweep ran once more under ncu (as `run --profile`), what ncu "
                "measured stored with the case");
  return {sub, [f](const CliContext& context) { return run_sweep_command(*f, context); }};
}

}  // namespace tilepath::cli
