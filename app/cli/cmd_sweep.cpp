// `tilepath sweep SPEC.json`: a resumable cartesian sweep into the database.

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
#include "core/sweep.h"

namespace tilepath::cli {
namespace {

struct SweepFlags {
  std::string spec, backend, db;
  bool json = false, dry_run = false, profile = false;
  std::int64_t max_cases = kDefaultMaxSweepCases;
};

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
      if (RunStore::file_schema_version(db) == RunStore::current_schema_version()) {
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
  PluginHost host;
  host.discover();
  const Backend& backend = choose_backend(host, backend_name, spec.settings.device);
  RunStore store = open_for_sweep(f.db, spec, backend);

  install_cancel_handlers();
  SweepOutcome outcome;
  {
    ProgressBar bar(static_cast<int>(spec.cases.size()), &cancel_flag());
    outcome = run_sweep(spec, backend, store, context.command_line, &bar, &cancel_flag());
    bar.finish();
  }

  // --profile: every ok case this sweep ran, once more under ncu (app/cli/ncu_profile.h).
  int profiled = 0;
  std::string profile_skipped;
  if (f.profile && outcome.run_id > 0) {
    CaseFilter filter;
    filter.run_id = outcome.run_id;
    filter.status = CaseStatus::ok;
    const std::vector<CaseSummary> ran = store.cases(filter);
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
                        {"skipped_invalid", spec.skipped_invalid}};
    if (f.profile) j["profile"] = {{"profiled", profiled}, {"skipped", profile_skipped}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("sweep %s on %s: %d cases, %d run, %d already stored, %d failed, %d unsupported%s -> %s\n",
                spec.name.c_str(), backend.name().c_str(), outcome.total, outcome.ran, outcome.skipped_existing,
                outcome.failed, outcome.unsupported, outcome.cancelled ? ", CANCELLED (rerun to resume)" : "",
                f.db.c_str());
    if (f.profile && !profile_skipped.empty()) std::printf("profile skipped: %s\n", profile_skipped.c_str());
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
  sub->add_flag("--profile", f->profile,
                "cuda: afterwards, every ok case the sweep ran once more under ncu (as `run --profile`), what ncu "
                "measured stored with the case");
  return {sub, [f](const CliContext& context) { return run_sweep_command(*f, context); }};
}

}  // namespace tilepath::cli
