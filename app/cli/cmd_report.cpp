// `tilepath report --db FILE --format md|csv`: one row per case (read-only); with --runs, one
// row per run (where the cases come from: its device, revision, command, notes and case counts).

#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/cli/command.h"
#include "app/cli/filter_flags.h"
#include "app/cli/output_file.h"
#include "core/report.h"

namespace tilepath::cli {
namespace {

struct ReportFlags {
  std::string db, format = "md";
  FilterFlags filter;
  bool runs = false;
  bool json = false;
};

int report_runs(const ReportFlags& f, const RunStore& store, const CaseFilter& filter) {
  if (!f.json) {
    const std::string text = run_report(store, f.format == "csv" ? ReportFormat::csv : ReportFormat::markdown, filter);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return kExitOk;
  }
  nlohmann::json rows = nlohmann::json::array();
  for (const RunCaseCounts& s : store.run_case_counts(filter)) {
    const RunInfo& r = s.run;
    nlohmann::json row = {{"run_id", r.id},
                          {"run_uuid", r.uuid},
                          {"started_at", r.started_at},
                          {"finished_at", r.finished_at},
                          {"backend", r.backend},
                          {"device", r.device},
                          {"device_uid", r.device_uid},
                          {"host", r.host},
                          {"tool_version", r.tool_version},
                          {"git_revision", r.git_revision},
                          {"cases", s.cases()}};
    for (std::size_t i = 0; i < kCaseStatusCount; ++i)
      row[std::string(to_string(static_cast<CaseStatus>(i)))] = s.cases_by_status[i];
    row["command"] = r.command;
    row["notes"] = r.notes;
    rows.push_back(std::move(row));
  }
  std::printf("%s\n", rows.dump(2).c_str());
  return kExitOk;
}

int report(const ReportFlags& f) {
  if (f.format != "md" && f.format != "csv") throw UsageError("--format: unknown '" + f.format + "'; allowed: md, csv");
  CaseFilter filter = build_filter(f.filter);
  require_existing(f.db, "--db");
  RunStore store = RunStore::open_read_only(f.db);
  if (f.runs) return report_runs(f, store, filter);
  if (f.json) {
    // As nlohmann::json's dump(2) of an array of the row objects, written a row at a time.
    const auto& columns = report_columns();
    bool first = true;
    for_each_report_row(store, filter, [&](const std::vector<std::string>& row) {
      nlohmann::json object = nlohmann::json::object();
      for (std::size_t i = 0; i < columns.size(); ++i) object[columns[i]] = row[i];
      std::string text = object.dump(2);
      std::string indented = first ? "[\n  " : ",\n  ";
      for (char c : text) {
        indented += c;
        if (c == '\n') indented += "  ";
      }
      std::fwrite(indented.data(), 1, indented.size(), stdout);
      first = false;
    });
    std::printf("%s\n", first ? "[]" : "\n]");
  } else {
    write_report(stdout, store, f.format == "csv" ? ReportFormat::csv : ReportFormat::markdown, filter);
  }
  return kExitOk;
}

}  // namespace

Command add_report_command(CLI::App& app) {
  auto f = std::make_shared<ReportFlags>();
  CLI::App* sub =
      app.add_subcommand("report", "One row per case (or, with --runs, per run) as a Markdown table or CSV");
  sub->add_option("--db", f->db, "database (opened read-only)")->required();
  sub->add_option("--format", f->format, "md, csv")->default_str("md");
  add_filter_flags(sub, f->filter);
  sub->add_flag("--runs", f->runs,
                "one row per run: its device, revision, command, notes and the cases the filters admit, by status");
  sub->add_flag("--json", f->json, "print the rows as JSON objects");
  return {sub, [f](const CliContext&) { return report(*f); }};
}

}  // namespace tilepath::cli
