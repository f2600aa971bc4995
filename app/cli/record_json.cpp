#include "app/cli/record_json.h"

#include <cmath>

namespace tilepath::cli {
namespace {

// JSON has no NaN: absent values are null.
nlohmann::json value_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace

nlohmann::json case_record_json(const CaseRecord& rec) {
  using nlohmann::json;
  json j;
  j["case_id"] = rec.id;
  j["run_id"] = rec.run_id;
  j["case_key"] = rec.case_key;
  j["status"] = std::string(to_string(rec.status));
  j["message"] = rec.message;
  j["op"] = to_json(rec.op);
  json measurements = json::object();
  for (const Measurement& m : rec.measurements) measurements[m.name] = value_or_null(m.value);
  j["measurements"] = measurements;
  json costs = json::array();
  for (const StageCostRow& c : rec.stage_costs)
    costs.push_back({{"stage", std::string(to_string(c.stage))},
                     {"method", std::string(to_string(c.method))},
                     {"cost_us", value_or_null(c.cost_us)}});
  j["stage_costs"] = costs;
  if (!rec.predictions.empty()) {
    const PredictionRow& p = rec.predictions.front();
    j["prediction"] = {{"ii_us", value_or_null(p.ii_us)},
                       {"limiting_stage", p.limiting_stage},
                       {"limiting_agent", p.limiting_agent},
                       {"overlap_efficiency", value_or_null(p.overlap_efficiency)},
                       {"model", p.model}};
  } else {
    j["prediction"] = nullptr;
  }
  json quality = json::array();
  for (const QualityRow& q : rec.quality)
    quality.push_back({{"metric", q.metric},
                       {"value", value_or_null(q.value)},
                       {"threshold", value_or_null(q.threshold)},
                       {"passed", q.passed},
                       {"distribution", q.distribution}});
  j["quality"] = quality;
  json artifacts = json::array();
  for (const Artifact& a : rec.artifacts)
    artifacts.push_back({{"name", a.name}, {"mime", a.mime}, {"size", a.data.size()}});
  j["artifacts"] = artifacts;
  const KernelMeta& k = rec.kernel;
  j["kernel"] = {{"name", k.kernel_name},
                 {"cubin_sha256", k.cubin_sha256},
                 {"regs_per_thread", k.regs_per_thread},
                 {"smem_static_bytes", k.smem_static_bytes},
                 {"smem_dynamic_bytes", k.smem_dynamic_bytes},
                 {"occupancy_theoretical", value_or_null(k.occupancy_theoretical)},
                 {"occupancy_achieved", value_or_null(k.occupancy_achieved)},
                 {"grid", {k.grid[0], k.grid[1], k.grid[2]}},
                 {"block", {k.block[0], k.block[1], k.block[2]}},
                 {"splits", k.splits}};
  return j;
}

}  // namespace tilepath::cli
