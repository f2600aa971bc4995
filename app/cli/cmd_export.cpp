// `tilepath export --db FILE --out NEW [filters]`: a filtered subset into a new database.

#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/cli/command.h"
#include "app/cli/filter_flags.h"
#include "app/cli/output_file.h"
#include "core/store/run_store.h"

namespace tilepath::cli {
namespace {

struct ExportFlags {
  std::string db, out;
  FilterFlags filter;
  bool json = false;
};

int export_subset(const ExportFlags& f) {
  CaseFilter filter = build_filter(f.filter);
  require_existing(f.db, "--db");
  require_absent(f.out, "--out");
  RunStore source = RunStore::open_read_only(f.db);
  NewFileGuard guard(f.out);
  source.export_subset(f.out, filter);
  RunStore result = RunStore::open_read_only(f.out);
  std::size_t runs = result.runs().size();
  long long cases = result.case_count();
  guard.keep();
  if (f.json)
    std::printf("%s\n",
                nlohmann::json({{"db", f.db}, {"out", f.out}, {"runs", runs}, {"cases", cases}}).dump(2).c_str());
  else
    std::printf("exported %lld cases in %zu runs from %s to %s\n", cases, runs, f.db.c_str(), f.out.c_str());
  return kExitOk;
}

}  // namespace

Command add_export_command(CLI::App& app) {
  auto f = std::make_shared<ExportFlags>();
  CLI::App* sub = app.add_subcommand("export", "Copy a filtered subset of a database into a new file");
  sub->add_option("--db", f->db, "source database (opened read-only)")->required();
  sub->add_option("--out", f->out, "new database file (must not exist)")->required();
  add_filter_flags(sub, f->filter);
  sub->add_flag("--json", f->json, "print JSON");
  return {sub, [f](const CliContext&) { return export_subset(*f); }};
}

}  // namespace tilepath::cli
