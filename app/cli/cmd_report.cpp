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
    const auto& columns = report_columns();
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : report_rows(store, filter)) {
      nlohmann::json object = nlohmann::json::object();
      for (std::size_t i = 0; i < columns.size(); ++i) object[columns[i]] = row[i];
      rows.push_back(object);
    }
    std::printf("%s\n", rows.dump(2).c_str());
  } else {
    std::string text = f.format == "csv" ? report_csv(store, filter) : report_markdown(store, filter);
    std::fwrite(text.data(), 1, text.size(), stdout);
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
