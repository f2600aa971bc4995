// `tilepath merge A B [C ...] --out OUT [--replace]`: union of databases (runs by UUID, cases by
// (run, case key), no duplicates, conflicting results reported); with --replace, a later input's
// case supersedes the earlier inputs' cases of the same backend, device and case key.

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/cli_output.h"
#include "app/cli/command.h"
#include "app/cli/output_file.h"
#include "core/store/run_store.h"

namespace tilepath::cli {
namespace {

struct MergeFlags {
  std::vector<std::string> inputs;
  std::string out;
  bool replace = false;
  bool json = false;
};

int merge(const MergeFlags& f) {
  for (const std::string& in : f.inputs) require_existing(in, "input");
  require_absent(f.out, "--out");
  // Every input must be a tilepath database before anything is written.
  for (const std::string& in : f.inputs) RunStore::open_read_only(in);
  NewFileGuard guard(f.out);
  const MergeResult merged = merge_databases(f.inputs, f.out, f.replace ? MergeMode::replace : MergeMode::unite);
  RunStore result = RunStore::open_read_only(f.out);
  const std::size_t runs = result.runs().size();
  const long long cases = result.case_count();
  guard.keep();
  // A case two inputs hold with different results is reported, never dropped silently.
  for (const std::string& c : merged.conflicts) print_error("tilepath merge", "conflict: " + c);
  if (f.json) {
    std::printf("%s\n", nlohmann::json({{"inputs", f.inputs},
                                        {"out", f.out},
                                        {"runs", runs},
                                        {"cases", cases},
                                        {"cases_present", merged.cases_present},
                                        {"cases_replaced", merged.cases_replaced},
                                        {"conflicts", merged.conflicts}})
                            .dump(2)
                            .c_str());
  } else {
    std::string names;
    for (const std::string& in : f.inputs) names += (names.empty() ? "" : ", ") + in;
    std::printf("merged %s into %s: %zu runs, %lld cases (%d already there, %zu conflicting", names.c_str(),
                f.out.c_str(), runs, cases, merged.cases_present, merged.conflicts.size());
    if (f.replace) std::printf(", %d replaced by a later input's", merged.cases_replaced);
    std::printf(")\n");
  }
  return kExitOk;
}

}  // namespace

Command add_merge_command(CLI::App& app) {
  auto f = std::make_shared<MergeFlags>();
  CLI::App* sub = app.add_subcommand("merge", "Merge databases into a new file");
  sub->add_option("inputs", f->inputs, "databases to merge, in order (two or more)")->required()->expected(2, -1);
  sub->add_option("--out", f->out, "new database file (must not exist)")->required();
  sub->add_flag("--replace", f->replace,
                "a case of a later input replaces the earlier inputs' cases of the same backend, device and case "
                "key (from other runs); each run that loses cases says so in its notes");
  sub->add_flag("--json", f->json, "print JSON");
  return {sub, [f](const CliContext&) { return merge(*f); }};
}

}  // namespace tilepath::cli
