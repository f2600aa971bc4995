// `tilepath merge A B --out C`: union of two databases (runs by UUID, no duplicates).

#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/cli/command.h"
#include "app/cli/output_file.h"
#include "core/store/run_store.h"

namespace tilepath::cli {
namespace {

struct MergeFlags {
  std::string a, b, out;
  bool json = false;
};

int merge(const MergeFlags& f) {
  require_existing(f.a, "input");
  require_existing(f.b, "input");
  require_absent(f.out, "--out");
  // Both inputs must be tilepath databases before anything is written.
  RunStore::open_read_only(f.a);
  RunStore::open_read_only(f.b);
  NewFileGuard guard(f.out);
  merge_databases(f.a, f.b, f.out);
  RunStore result = RunStore::open_read_only(f.out);
  std::size_t runs = result.runs().size();
  long long cases = result.case_count();
  guard.keep();
  if (f.json)
    std::printf(
        "%s\n",
        nlohmann::json({{"inputs", {f.a, f.b}}, {"out", f.out}, {"runs", runs}, {"cases", cases}}).dump(2).c_str());
  else
    std::printf("merged %s and %s into %s: %zu runs, %lld cases\n", f.a.c_str(), f.b.c_str(), f.out.c_str(), runs,
                cases);
  return kExitOk;
}

}  // namespace

Command add_merge_command(CLI::App& app) {
  auto f = std::make_shared<MergeFlags>();
  CLI::App* sub = app.add_subcommand("merge", "Merge two databases into a new file");
  sub->add_option("a", f->a, "first database")->required();
  sub->add_option("b", f->b, "second database")->required();
  sub->add_option("--out", f->out, "new database file (must not exist)")->required();
  sub->add_flag("--json", f->json, "print JSON");
  return {sub, [f](const CliContext&) { return merge(*f); }};
}

}  // namespace tilepath::cli
