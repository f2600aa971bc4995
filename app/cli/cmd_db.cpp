// `tilepath db upgrade FILE`: migrate an older database to this build's schema.
// `tilepath db reanalyze FILE`: derive every stored prediction again from the stored
// measurements, under the analysis layer's current rules (no GPU needed).

#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/cli/command.h"
#include "app/cli/output_file.h"
#include "core/analysis/case_analysis.h"
#include "core/store/run_store.h"

namespace tilepath::cli {
namespace {

struct DbFlags {
  std::string file;
  bool json = false;
};

void print(const DbFlags& f, const nlohmann::json& j, const std::string& text) {
  if (f.json)
    std::printf("%s\n", j.dump(2).c_str());
  else
    std::printf("%s\n", text.c_str());
}

int upgrade(const DbFlags& f) {
  require_existing(f.file, "FILE");
  const int before = RunStore::file_schema_version(f.file);
  const int current = RunStore::current_schema_version();
  int stale = 0;  // predictions derived before unknown stages were recorded
  {
    RunStore store = before == current ? RunStore::open_read_only(f.file) : RunStore::open(f.file);  // migrates
    for (const CaseSummary& c : store.cases())
      for (const PredictionRow& p : c.record.predictions) stale += p.unknown_stages ? 0 : 1;
  }
  std::string text = before == current ? f.file + ": already at schema version " + std::to_string(current)
                                       : f.file + ": upgraded from schema version " + std::to_string(before) + " to " +
                                             std::to_string(current);
  if (stale > 0)
    text += "; " + std::to_string(stale) +
            " stored predictions were derived before unknown stages were recorded: run `tilepath db reanalyze " +
            f.file + "`";
  print(f,
        {{"db", f.file},
         {"from_version", before},
         {"to_version", current},
         {"upgraded", before != current},
         {"predictions_to_reanalyze", stale}},
        text);
  return kExitOk;
}

int reanalyze(const DbFlags& f) {
  require_existing(f.file, "FILE");
  const int before = RunStore::file_schema_version(f.file);
  RunStore store = RunStore::open(f.file);
  std::vector<CasePredictions> updates;
  int with_prediction = 0, lower_bounds = 0;
  for (const CaseSummary& c : store.cases()) {
    if (c.record.status != CaseStatus::ok && c.record.status != CaseStatus::failed) continue;
    const analysis::CaseAnalysis a = analysis::analyze_case(c.record);
    CasePredictions update{c.case_id, {}};
    if (auto row = analysis::prediction_row(a)) {
      update.predictions.push_back(std::move(*row));
      ++with_prediction;
      lower_bounds += a.ii_is_lower_bound() ? 1 : 0;
    }
    updates.push_back(std::move(update));
  }
  store.replace_predictions(updates);  // all or nothing
  const int cases = static_cast<int>(updates.size());
  const std::string text =
      f.file + ": derived the predictions of " + std::to_string(cases) + " measured cases again (" +
      analysis::kPredictionModel + "): " + std::to_string(with_prediction) + " have one, " +
      std::to_string(cases - with_prediction) + " have no stage costs; " + std::to_string(lower_bounds) +
      " predictions are lower bounds (a per-tile stage is unknown)" +
      (before != RunStore::current_schema_version() ? "; upgraded from schema version " + std::to_string(before) : "");
  print(f,
        {{"db", f.file},
         {"model", analysis::kPredictionModel},
         {"cases", cases},
         {"with_prediction", with_prediction},
         {"lower_bounds", lower_bounds},
         {"schema_version_before", before}},
        text);
  return kExitOk;
}

}  // namespace

Command add_db_command(CLI::App& app) {
  auto upgrade_flags = std::make_shared<DbFlags>();
  auto reanalyze_flags = std::make_shared<DbFlags>();
  CLI::App* sub = app.add_subcommand("db", "Maintain a run database: upgrade its schema, derive predictions again");
  sub->require_subcommand(1);
  CLI::App* up = sub->add_subcommand("upgrade", "Migrate FILE to this tilepath's schema (one transaction)");
  up->add_option("FILE", upgrade_flags->file, "database to upgrade")->required();
  up->add_flag("--json", upgrade_flags->json, "print JSON");
  CLI::App* re = sub->add_subcommand(
      "reanalyze", "Derive every stored prediction again from the stored measurements (upgrades FILE first)");
  re->add_option("FILE", reanalyze_flags->file, "database to reanalyze")->required();
  re->add_flag("--json", reanalyze_flags->json, "print JSON");
  return {sub, [=](const CliContext&) {
            if (up->parsed()) return upgrade(*upgrade_flags);
            return reanalyze(*reanalyze_flags);
          }};
}

}  // namespace tilepath::cli
