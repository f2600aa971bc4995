// `tilepath model check|fit|ii`: how far the GPU model of the CUDA kernels
// (core/perf/cuda_latency_model.h) is from the latencies a database measured, fitting its
// coefficients (models/fits/<gpu>.json) to them, shapes of a held-out list left out, and how
// far the kernel II model of the isolated stage costs (core/analysis/kernel_ii_model.h) is
// from the measured tile intervals.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/command.h"
#include "app/cli/op_flags.h"
#include "core/analysis/kernel_ii_model.h"
#include "core/git_revision.h"
#include "core/perf/cuda_model_fit.h"
#include "core/quantile.h"
#include "core/store/run_store.h"

namespace tilepath::cli {
namespace {

struct ModelFlags {
  std::string db, gpu = "h200", held_out, out;
  int iterations = 3000;
  bool json = false;
  bool per_case = false;
};

// Every ok cuda case of the database with its measured latency, split by the held-out shapes,
// and the devices that measured them (a model checked against another GPU's cases is a
// mistake a reader should see).
struct Split {
  std::vector<perf::MeasuredLatency> train, held_out, all;
  std::vector<bool> all_held_out;      // per case of `all`
  std::map<std::string, int> devices;  // cases per device name
};

Split split_cases(const ModelFlags& f) {
  const perf::HeldOutShapes held = f.held_out.empty() ? perf::HeldOutShapes{} : perf::load_held_out_shapes(f.held_out);
  RunStore store = RunStore::open_read_only(f.db);
  CaseFilter filter;
  filter.backend = "cuda";
  filter.status = CaseStatus::ok;
  Split s;
  for (const CaseSummary& c : store.cases(filter)) {
    const auto latency = c.record.measurement("latency_us");
    if (!latency || *latency <= 0) continue;
    const perf::MeasuredLatency m{c.record.op, *latency};
    const bool out = held.holds_out(m.op);
    (out ? s.held_out : s.train).push_back(m);
    s.all.push_back(m);
    s.all_held_out.push_back(out);
    ++s.devices[c.device];
  }
  if (s.all.empty()) throw std::runtime_error(f.db + ": no measured cuda case");
  return s;
}

nlohmann::json errors_json(const perf::LatencyErrors& e) {
  return {{"cases", e.cases}, {"median", e.median}, {"p90", e.p90}, {"worst", e.worst}};
}

nlohmann::json report(const Split& s, const perf::GpuModel& gpu, const perf::CudaKernelFit& fit) {
  nlohmann::json j = {{"all", errors_json(perf::latency_errors(s.all, gpu, fit))}};
  if (!s.held_out.empty()) {
    j["train"] = errors_json(perf::latency_errors(s.train, gpu, fit));
    j["held_out"] = errors_json(perf::latency_errors(s.held_out, gpu, fit));
  }
  for (const char* mode : {"none", "full", "k_only", "separate_kv"}) {
    std::vector<perf::MeasuredLatency> of_mode;
    for (const auto& c : s.all)
      if (to_string(c.op.mode) == mode) of_mode.push_back(c);
    if (!of_mode.empty()) j["by_mode"][mode] = errors_json(perf::latency_errors(of_mode, gpu, fit));
  }
  return j;
}

void print_report(const nlohmann::json& r) {
  for (const char* part : {"train", "held_out", "all"}) {
    if (!r.contains(part)) continue;
    const auto& e = r[part];
    std::printf("%-9s %5d cases  median %5.1f%%  p90 %5.1f%%  worst %5.1f%%\n", part, e["cases"].get<int>(),
                100 * e["median"].get<double>(), 100 * e["p90"].get<double>(), 100 * e["worst"].get<double>());
  }
  for (const auto& [mode, e] : r["by_mode"].items())
    std::printf("  %-12s %4d cases  median %5.1f%%  p90 %5.1f%%\n", mode.c_str(), e["cases"].get<int>(),
                100 * e["median"].get<double>(), 100 * e["p90"].get<double>());
}

// Every case's prediction against its measurement, worst first.
nlohmann::json per_case_rows(const Split& s, const perf::GpuModel& gpu, const perf::CudaKernelFit& fit) {
  std::vector<nlohmann::json> rows;
  for (std::size_t i = 0; i < s.all.size(); ++i) {
    const perf::CudaLatencyEstimate e = perf::estimate_cuda_latency(s.all[i].op, gpu, fit);
    const double measured = s.all[i].latency_us;
    rows.push_back({{"case", describe_case(s.all[i].op)},
                    {"predicted_us", e.latency_us},
                    {"measured_us", measured},
                    {"relative_error", std::abs(e.latency_us - measured) / measured},
                    {"limit", e.limit},
                    {"held_out", bool(s.all_held_out[i])}});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["relative_error"].get<double>() > b["relative_error"].get<double>();
  });
  return rows;
}

std::string devices_text(const std::map<std::string, int>& devices) {
  std::string out;
  for (const auto& [name, n] : devices) out += (out.empty() ? "" : ", ") + name + " (" + std::to_string(n) + " cases)";
  return out;
}

int check(const ModelFlags& f) {
  const perf::GpuModel gpu = perf::load_gpu_model(f.gpu);
  const perf::CudaKernelFit fit = perf::load_cuda_kernel_fit(gpu.id);
  const Split s = split_cases(f);
  const nlohmann::json r = report(s, gpu, fit);
  const nlohmann::json rows = per_case_rows(s, gpu, fit);
  if (f.json) {
    nlohmann::json j = {{"gpu", gpu.id}, {"fit", fit.file}, {"devices", s.devices}, {"errors", r}};
    if (f.per_case) j["per_case"] = rows;
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  std::printf("%s: latency of the CUDA kernel model (%s) against %s, measured on %s\n", gpu.id.c_str(),
              fit.file.c_str(), f.db.c_str(), devices_text(s.devices).c_str());
  print_report(r);
  const std::size_t shown = f.per_case ? rows.size() : std::min<std::size_t>(rows.size(), 10);
  std::printf("%s (predicted / measured latency, what limits the model's tile):\n",
              f.per_case ? "every case, worst first" : "the 10 worst cases (--per-case lists all)");
  for (std::size_t i = 0; i < shown; ++i) {
    const nlohmann::json& row = rows[i];
    std::printf("  %6.1f%%  %9.1f / %9.1f us  %-13s  %s%s\n", 100 * row["relative_error"].get<double>(),
                row["predicted_us"].get<double>(), row["measured_us"].get<double>(),
                row["limit"].get<std::string>().c_str(), row["case"].get<std::string>().c_str(),
                row["held_out"].get<bool>() ? "  (held out)" : "");
  }
  return kExitOk;
}

int fit(const ModelFlags& f) {
  if (f.held_out.empty()) throw UsageError("--held-out: required, the shapes the fit must not see");
  if (f.out.empty()) throw UsageError("--out: required, the fit file to write (models/fits/<gpu>.json)");
  const perf::GpuModel gpu = perf::load_gpu_model(f.gpu);
  const Split s = split_cases(f);
  if (s.train.empty()) throw std::runtime_error(f.held_out + ": holds out every case; nothing left to fit on");
  const perf::CudaKernelFit start = perf::load_cuda_kernel_fit(gpu.id);
  // Two restarts from the last simplex's best point get the search out of a collapsed simplex.
  perf::CudaKernelFit fitted = start;
  for (int round = 0; round < 3; ++round) fitted = perf::fit_cuda_kernel(s.train, gpu, fitted, f.iterations);
  const nlohmann::json r = report(s, gpu, fitted);
  const std::string how = "fitted by `tilepath model fit --db " + f.db + " --gpu " + gpu.id + " --held-out " +
                          f.held_out + "` on " + std::to_string(s.train.size()) + " measured cuda cases (source " +
                          build_git_revision() + ")";
  nlohmann::json coefficients = nlohmann::json::object();
  const std::vector<double> values = perf::fit_values(fitted);
  for (std::size_t i = 0; i < values.size(); ++i)
    coefficients[perf::cuda_kernel_fit_names()[i]] = {{"value", values[i]}, {"source", how}};
  const nlohmann::json file = {{"fitted_on", gpu.id},
                               {"description", "coefficients of the CUDA kernel model (docs/sim-model.md)"},
                               {"coefficients", coefficients},
                               {"held_out", f.held_out},
                               {"errors", r}};
  std::ofstream out(f.out);
  if (!(out << file.dump(2) << "\n")) throw std::runtime_error(f.out + ": cannot write");
  std::printf("wrote %s\n", f.out.c_str());
  print_report(r);
  return kExitOk;
}

// |kernel II - measured tile interval| / measured over every ok cuda case with a tile
// interval; a case whose kernel II is a lower bound (a stage without an isolated cost)
// is counted apart, not in the errors.
int kernel_ii(const ModelFlags& f) {
  RunStore store = RunStore::open_read_only(f.db);
  CaseFilter filter;
  filter.backend = "cuda";
  filter.status = CaseStatus::ok;
  std::map<std::string, std::vector<double>> errors;  // "all" and per mode
  struct Compared {
    double error;
    std::string label;
    nlohmann::json row;
  };
  std::vector<Compared> compared;
  int cases = 0, lower_bounds = 0, without_interval = 0, without_isolated = 0;
  for (const CaseSummary& c : store.cases(filter)) {
    ++cases;
    const auto p = analysis::predict_kernel_ii(c.record);
    if (!p) {
      ++without_isolated;
    } else if (!p->missing.empty()) {
      ++lower_bounds;
    } else if (!std::isfinite(p->measured_ii_us) || p->measured_ii_us <= 0) {
      ++without_interval;
    } else {
      const double e = std::abs(p->ii_us - p->measured_ii_us) / p->measured_ii_us;
      errors["all"].push_back(e);
      errors[std::string(to_string(c.record.op.mode))].push_back(e);
      nlohmann::json row = p->to_json();
      row["case"] = describe_case(c.record.op);
      row["relative_error"] = e;
      compared.push_back({e, row["case"].get<std::string>(), std::move(row)});
    }
  }
  // Worst first: the cases the model misses are what a reader looks for.
  std::sort(compared.begin(), compared.end(), [](const Compared& a, const Compared& b) { return a.error > b.error; });
  nlohmann::json j = {{"db", f.db},
                      {"cases", cases},
                      {"compared", errors["all"].size()},
                      {"lower_bounds", lower_bounds},
                      {"without_isolated_costs", without_isolated},
                      {"without_tile_interval", without_interval}};
  for (const auto& [group, e] : errors)
    if (!e.empty()) j["errors"][group] = {{"cases", e.size()}, {"median", quantile(e, 0.5)}, {"p90", quantile(e, 0.9)}};
  if (f.per_case) {
    j["per_case"] = nlohmann::json::array();
    for (const Compared& c : compared) j["per_case"].push_back(c.row);
  }
  if (f.json) {
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  std::printf("%s: kernel II of the isolated stage costs against the measured tile interval, %d cuda cases\n",
              f.db.c_str(), cases);
  std::printf(
      "compared %zu; lower bounds (a stage without an isolated cost) %d; no isolated cost %d; no tile "
      "interval %d\n",
      errors["all"].size(), lower_bounds, without_isolated, without_interval);
  for (const auto& [group, e] : errors)
    if (!e.empty())
      std::printf("  %-12s %4zu cases  median %5.1f%%  p90 %5.1f%%\n", group.c_str(), e.size(), 100 * quantile(e, 0.5),
                  100 * quantile(e, 0.9));
  const std::size_t shown = f.per_case ? compared.size() : std::min<std::size_t>(compared.size(), 10);
  if (shown > 0)
    std::printf("%s (predicted / measured tile interval, limiting agent):\n",
                f.per_case ? "every compared case, worst first" : "the 10 worst cases (--per-case lists all)");
  for (std::size_t i = 0; i < shown; ++i) {
    const nlohmann::json& r = compared[i].row;
    std::printf("  %6.1f%%  %8.3f / %8.3f us  %-15s  %s\n", 100 * compared[i].error, r["ii_us"].get<double>(),
                r["measured_ii_us"].get<double>(), r["limiting_agent"].get<std::string>().c_str(),
                compared[i].label.c_str());
  }
  return kExitOk;
}

}  // namespace

Command add_model_command(CLI::App& app) {
  auto f = std::make_shared<ModelFlags>();
  CLI::App* sub = app.add_subcommand("model", "The GPU model of the CUDA kernels against measured latencies");
  sub->require_subcommand(1);
  CLI::App* chk = sub->add_subcommand("check", "Latency errors of the model over a database's cuda cases");
  CLI::App* ft = sub->add_subcommand("fit", "Fit the model's coefficients to a database, held-out shapes left out");
  for (CLI::App* c : {chk, ft}) {
    c->add_option("--db", f->db, "database with measured cuda cases")->required();
    c->add_option("--gpu", f->gpu, "GPU model id (models/gpus)")->default_str("h200");
    c->add_option("--held-out", f->held_out, "JSON list of shapes the fit never sees (models/fits/*-held-out.json)");
  }
  chk->add_flag("--json", f->json, "print JSON");
  chk->add_flag("--per-case", f->per_case, "every case, worst first (text), or a per_case array (JSON)");
  CLI::App* ii = sub->add_subcommand(
      "ii", "Kernel II of the isolated stage costs against the measured tile intervals of a database's cuda cases");
  ii->add_option("--db", f->db, "database with measured cuda cases")->required();
  ii->add_flag("--json", f->json, "print JSON");
  ii->add_flag("--per-case", f->per_case, "every compared case, worst first (text), or a per_case array (JSON)");
  ft->add_option("--out", f->out, "fit file to write")->required();
  ft->add_option("--iterations", f->iterations, "Nelder-Mead steps per round")->default_str("3000");
  return {sub, [f, chk, ii](const CliContext&) {
            return chk->parsed() ? check(*f) : ii->parsed() ? kernel_ii(*f) : fit(*f);
          }};
}

}  // namespace tilepath::cli
