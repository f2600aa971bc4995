// `tilepath report --db FILE --format md|csv`: one row per case (read-only).

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
  bool json = false;
};

int report(const ReportFlags& f) {
  if (f.format != "md" && f.format != "csv") throw UsageError("--format: unknown '" + f.format + "'; allowed: md, csv");
  CaseFilter filter = build_filter(f.filter);
  require_existing(f.db, "--db");
  RunStore store = RunStore::open_read_only(f.db);
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
  CLI::App* sub = app.add_subcommand("report", "One row per case as a Markdown table or CSV");
  sub->add_option("--db", f->db, "database (opened read-only)")->required();
  sub->add_option("--format", f->format, "md, csv")->default_str("md");
  add_filter_flags(sub, f->filter);
  sub->add_flag("--json", f->json, "print the rows as JSON objects");
  return {sub, [f](const CliContext&) { return report(*f); }};
}

}  // namespace tilepath::cli
