#include "app/cli/filter_flags.h"

#include "app/cli/command.h"
#include "core/operating_point.h"

namespace tilepath::cli {
namespace {

bool given(const CLI::App* sub, const char* name) { return sub->get_option(name)->count() > 0; }

CaseStatus parse_status(const std::string& s) {
  for (CaseStatus v :
       {CaseStatus::ok, CaseStatus::failed, CaseStatus::unsupported, CaseStatus::error, CaseStatus::cancelled})
    if (to_string(v) == s) return v;
  throw ValidationError("--status", "unknown value '" + s + "'", "ok, failed, unsupported, error, cancelled");
}

}  // namespace

void add_filter_flags(CLI::App* sub, FilterFlags& f) {
  f.sub = sub;
  const char* group = "Filters";
  sub->add_option("--run-id", f.run_id, "only this run (id)")->group(group);
  sub->add_option("--backend", f.backend, "only this backend (cpu, sim, cuda, ...)")->group(group);
  sub->add_option("--device", f.device, "only this device name")->group(group);
  sub->add_option("--kv", f.kv, "k16v16, k8v16, k16v8, k8v8")->group(group);
  sub->add_option("--k-path", f.k_path, "transform, fp8_qk, k16")->group(group);
  sub->add_option("--mode", f.mode, "none, full, k_only, separate_kv")->group(group);
  sub->add_option("--cache", f.cache, "l2_warm, hbm_cold")->group(group);
  sub->add_option("--mma", f.mma, "mma_sync, wgmma")->group(group);
  sub->add_option("--batch", f.batch, "only this batch size")->group(group);
  sub->add_option("--context", f.context, "only this context length")->group(group);
  sub->add_option("--head-dim", f.head_dim, "only this head dim")->group(group);
  sub->add_option("--status", f.status, "ok, failed, unsupported, error, cancelled")->group(group);
}

CaseFilter build_filter(const FilterFlags& f) {
  CaseFilter filter;
  const CLI::App* sub = f.sub;
  if (given(sub, "--run-id")) filter.run_id = f.run_id;
  if (given(sub, "--backend")) filter.backend = f.backend;
  if (given(sub, "--device")) filter.device = f.device;
  // Names are parsed and re-printed so a typo is an error, not an empty result.
  if (given(sub, "--kv")) filter.kv = std::string(to_string(parse_kv_dtype(f.kv, "--kv")));
  if (given(sub, "--k-path")) filter.k_path = std::string(to_string(parse_k_path(f.k_path, "--k-path")));
  if (given(sub, "--mode")) filter.mode = std::string(to_string(parse_transform_mode(f.mode, "--mode")));
  if (given(sub, "--cache")) filter.cache = std::string(to_string(parse_cache_state(f.cache, "--cache")));
  if (given(sub, "--mma")) filter.mma = std::string(to_string(parse_mma(f.mma, "--mma")));
  if (given(sub, "--batch")) filter.batch = f.batch;
  if (given(sub, "--context")) filter.context = f.context;
  if (given(sub, "--head-dim")) filter.head_dim = f.head_dim;
  if (given(sub, "--status")) filter.status = parse_status(f.status);
  return filter;
}

}  // namespace tilepath::cli
