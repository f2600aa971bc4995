// Runs one case through a backend plugin and turns its tp_result into a CaseRecord
// with the II-model prediction.

#include "core/case_runner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/analysis/case_analysis.h"
#include "core/git_revision.h"
#include "core/perf/gpu_model.h"

#ifndef TILEPATH_VERSION
#define TILEPATH_VERSION "unknown"
#endif

namespace tilepath {
namespace {

struct ProgressContext {
  ProgressObserver* observer;
  const CancelFlag* cancel;
  std::string label;
};

// The text of models/keys/<name>.json, the file the gate reads for these keys, so the
// plugin generates the case's inputs from the same parameters (tp_run_options.key_model_json).
// "" without a models directory or that file: the plugin's built-in copy, embedded from the
// same file at build time, is then what it uses.
std::string key_model_text(const std::string& name) {
  try {
    std::ifstream in(std::filesystem::path(perf::models_dir()) / "keys" / (name + ".json"), std::ios::binary);
    if (!in) return {};
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  } catch (const std::exception&) {
    return {};
  }
}

int forward_progress(void* user, double fraction, const char* phase) {
  auto* ctx = static_cast<ProgressContext*>(user);
  if (ctx->observer != nullptr) {
    std::string label = ctx->label;
    if (phase != nullptr && *phase != '\0') label += std::string(" [") + phase + "]";
    ctx->observer->progress(std::isfinite(fraction) ? std::clamp(fraction, 0.0, 1.0) : 0.0, label);
    if (ctx->observer->cancelled()) return 1;  // the ABI: nonzero here cancels like the flag
  }
  return ctx->cancel != nullptr && ctx->cancel->load() != 0 ? 1 : 0;
}

std::uint64_t fresh_seed() {
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^
         static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

void add_measurement(CaseRecord& rec, const char* name, double value, const char* unit) {
  if (std::isfinite(value)) rec.measurements.push_back({name, value, unit});
}

std::string utc_now_iso8601() {
  auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

CaseStatus status_from_result(const tp_result& r) {
  switch (r.status) {
    case TP_OK:
      // A backend that checked correctness and missed its tolerance is a failure even
      // if it forgot to say so; one that did not check (NaN error, e.g. sim) is not.
      return (std::isfinite(r.rel_l2_error) && !r.passed) ? CaseStatus::failed : CaseStatus::ok;
    case TP_ERR_WRONG_RESULT:
      return CaseStatus::failed;
    case TP_ERR_UNSUPPORTED:
      return CaseStatus::unsupported;
    case TP_ERR_CANCELLED:
      return CaseStatus::cancelled;
    default:
      return CaseStatus::error;
  }
}

void copy_kernel_meta(const tp_result& r, KernelMeta& k) {
  k.kernel_name = r.kernel_name;
  k.cubin_sha256 = r.cubin_sha256;
  // The plugin leaves ints it cannot provide at 0 (zero-initialised struct); a
  // register count of 0 means "not reported", not "zero registers".
  k.regs_per_thread = r.regs_per_thread > 0 ? r.regs_per_thread : -1;
  k.smem_static_bytes = r.smem_static_bytes > 0 || r.kernel_name[0] != '\0' ? r.smem_static_bytes : -1;
  k.smem_dynamic_bytes = r.smem_dynamic_bytes > 0 || r.kernel_name[0] != '\0' ? r.smem_dynamic_bytes : -1;
  k.occupancy_theoretical = r.occupancy_theoretical;
  k.occupancy_achieved = r.occupancy_achieved;
  for (int i = 0; i < 3; ++i) {
    k.grid[i] = r.grid[i];
    k.block[i] = r.block[i];
  }
  k.splits = r.splits;
}

// The II prediction from the case's stage costs, under the analysis layer's one
// preference rule (core/analysis/stage_cost_choice.h); none when nothing was measured.
void add_prediction(CaseRecord& rec) {
  if (auto row = analysis::prediction_row(analysis::analyze_case(rec))) rec.predictions.push_back(std::move(*row));
}

// The inputs' distribution as the plugin reports it; a plugin of ABI 2.1 or older made
// the speed runs' Gaussian inputs without saying so.
std::string input_distribution(const tp_result& r, const RunSettings& settings) {
  const std::string reported(r.key_distribution, strnlen(r.key_distribution, sizeof r.key_distribution));
  return reported.empty() ? settings.key_distribution : reported;
}

// Two separate verdicts on the case's output (docs/gate.md). The kernel check (does the
// kernel compute its own arithmetic?) decides the case's status; the gate (how far is
// that arithmetic from attention at full precision?) is stored beside it and decides
// nothing about the speed run.
void add_quality(CaseRecord& rec, const tp_result& r, const RunSettings& settings) {
  const std::string distribution = input_distribution(r, settings);
  const bool passed = r.passed != 0;
  if (std::isfinite(r.rel_l2_error))
    rec.quality.push_back({"kernel_check_rel_l2", r.rel_l2_error, r.tolerance, passed, distribution});
  // max_abs has no tolerance of its own; it carries the check's verdict for context.
  if (std::isfinite(r.max_abs_error))
    rec.quality.push_back({"kernel_check_max_abs", r.max_abs_error, NAN, passed, distribution});
  if (r.check_rows_total > 0) {
    add_measurement(rec, "kernel_check_rows_checked", r.check_rows_checked, "rows");
    add_measurement(rec, "kernel_check_rows_total", r.check_rows_total, "rows");
  }

  if (r.gate_rows_checked <= 0) return;
  const numerics::GateThresholds& t = settings.gate_thresholds;
  auto gate_row = [&](const char* metric, const tp_gate_value& v, double threshold, bool at_most) {
    if (!std::isfinite(v.worst)) return;
    const bool ok = std::isnan(threshold) || (at_most ? v.worst <= threshold : v.worst >= threshold);
    rec.quality.push_back({metric, v.worst, threshold, ok, distribution});
    add_measurement(rec, (std::string("gate_") + metric + "_median").c_str(), v.median, "");
  };
  gate_row("rel_l2", r.gate_rel_l2, t.rel_l2, true);
  gate_row("max_abs", r.gate_max_abs, t.max_abs, true);
  gate_row("kl", r.gate_kl, t.kl, true);
  gate_row("top8", r.gate_top8, t.top8, false);
  gate_row("top32", r.gate_top32, t.top32, false);
  add_measurement(rec, "gate_rows_checked", r.gate_rows_checked, "rows");
  add_measurement(rec, "gate_rows_total", r.gate_rows_total, "rows");
}

// The plugin's stage costs; an entry naming a stage or method this build does not
// know is dropped rather than misfiled (Backend::run bounds the count).
void copy_stage_costs(CaseRecord& rec, const tp_result& r) {
  for (int i = 0; i < r.stage_cost_count && r.stage_costs != nullptr; ++i) {
    const tp_stage_cost& c = r.stage_costs[i];
    if (c.stage < 0 || c.stage >= TP_STAGE_COUNT || c.method < 0 || c.method >= TP_COST_METHOD_COUNT) continue;
    if (std::isfinite(c.cost_us))
      rec.stage_costs.push_back({static_cast<Stage>(c.stage), static_cast<CostMethod>(c.method), c.cost_us});
  }
}

void copy_metrics_and_artifacts(CaseRecord& rec, const tp_result& r) {
  for (int i = 0; i < r.metric_count && r.metrics != nullptr; ++i)
    add_measurement(rec, r.metrics[i].name, r.metrics[i].value, r.metrics[i].unit);
  for (int i = 0; i < r.artifact_count && r.artifacts != nullptr; ++i) {
    const tp_artifact& a = r.artifacts[i];
    Artifact copy{a.name, a.mime, {}};
    if (a.data != nullptr && a.size > 0) copy.data.assign(a.data, a.data + a.size);
    rec.artifacts.push_back(std::move(copy));
  }
}

}  // namespace

std::string case_label(const OperatingPoint& op) {
  return op.variant_label() + " B=" + std::to_string(op.batch) + " S=" + std::to_string(op.context) + " " +
         std::string(to_string(op.cache));
}

nlohmann::json to_json(const RunSettings& s) {
  return {{"device", s.device},
          {"warmup", s.warmup},
          {"repeats", s.repeats},
          {"stage_costs", s.stage_costs},
          {"tile_interval", s.tile_interval},
          {"seed", s.seed},
          {"keys", s.key_distribution},
          {"gate_thresholds", s.gate_thresholds.to_json()},
          {"gpu_model", s.gpu_model},
          {"save_tensors_dir", s.save_tensors_dir}};
}

std::string case_key(const OperatingPoint& op, const RunSettings& settings) {
  // The model a simulating backend predicts for changes its numbers, so it is part
  // of the identity; repeats, seed and ablation switches only change precision.
  std::string key = op.key();
  if (!settings.gpu_model.empty()) key += "|gpu=" + settings.gpu_model;
  // Other inputs give other gate results; Gaussian keys keep the keys stored runs have.
  if (settings.key_distribution != "gaussian") key += "|keys=" + settings.key_distribution;
  return key;
}

CaseRecord run_case(const Backend& backend, const OperatingPoint& op, const RunSettings& settings,
                    ProgressObserver* observer, const CancelFlag* cancel) {
  CaseRecord rec;
  rec.op = op;
  rec.case_key = case_key(op, settings);

  auto finish = [&rec](CaseStatus status, std::string message) -> CaseRecord& {
    rec.status = status;
    rec.message = std::move(message);
    rec.finished_at = utc_now_iso8601();
    return rec;
  };

  try {
    op.validate();
  } catch (const ValidationError& e) {
    return finish(CaseStatus::error, e.what());
  }
  if ((cancel != nullptr && cancel->load()) || (observer != nullptr && observer->cancelled()))
    return finish(CaseStatus::cancelled, "cancelled before start");

  std::string why = backend.unsupported_reason(settings.device, op, settings.gpu_model);
  if (!why.empty()) return finish(CaseStatus::unsupported, why);

  ProgressContext progress{observer, cancel, case_label(op)};

  tp_run_options options{};
  options.struct_size = sizeof(tp_run_options);
  options.warmup = settings.warmup;
  options.repeats = settings.repeats;
  options.ablations =
      (settings.stage_costs ? TP_ABLATE_STAGE_COSTS : 0u) | (settings.tile_interval ? TP_ABLATE_TILE_INTERVAL : 0u);
  options.seed = settings.seed != 0 ? settings.seed : fresh_seed();
  options.save_tensors_dir = settings.save_tensors_dir.empty() ? nullptr : settings.save_tensors_dir.c_str();
  options.progress = &forward_progress;
  options.progress_user = &progress;
  // Plugins poll the host's flag directly; an observer cancels through the progress callback.
  options.cancel = cancel != nullptr ? abi_cancel_flag(cancel) : nullptr;
  options.key_distribution = settings.key_distribution.c_str();
  const std::string key_model_json = key_model_text(settings.key_distribution);
  options.key_model_json = key_model_json.empty() ? nullptr : key_model_json.c_str();

  tp_result r{};  // Backend::run prepares it (struct_size, NaN for every double)
  backend.run(settings.device, op, options, r, settings.gpu_model);

  CaseStatus status = status_from_result(r);
  std::string message = r.message;
  if (status == CaseStatus::failed && message.empty()) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "rel_l2 error %.3g exceeds tolerance %.3g", r.rel_l2_error, r.tolerance);
    message = buf;
  }

  if (status == CaseStatus::ok || status == CaseStatus::failed) {
    add_measurement(rec, "latency_us", r.latency_us, "us");
    add_measurement(rec, "latency_min_us", r.latency_min_us, "us");
    add_measurement(rec, "latency_max_us", r.latency_max_us, "us");
    add_measurement(rec, "tile_interval_us", r.tile_interval_us, "us");
    if (r.tile_tokens > 0) add_measurement(rec, "tile_tokens", r.tile_tokens, "tokens");
    if (r.repeats > 0) add_measurement(rec, "repeats", r.repeats, "");
    add_measurement(rec, "bytes_moved", r.bytes_moved, "B");
    add_measurement(rec, "read_bandwidth_gbps", r.read_bandwidth_gbps, "GB/s");
    double floor_fraction = r.floor_fraction;
    // Derive the floor fraction when the backend gave its parts but not the ratio.
    if (!std::isfinite(floor_fraction) && std::isfinite(r.bytes_moved) && std::isfinite(r.read_bandwidth_gbps) &&
        r.read_bandwidth_gbps > 0 && std::isfinite(r.latency_us) && r.latency_us > 0)
      floor_fraction = (r.bytes_moved / (r.read_bandwidth_gbps * 1e3)) / r.latency_us;
    add_measurement(rec, "floor_fraction", floor_fraction, "");
    copy_metrics_and_artifacts(rec, r);

    copy_stage_costs(rec, r);

    copy_kernel_meta(r, rec.kernel);
    add_quality(rec, r, settings);
    try {
      add_prediction(rec);
    } catch (const std::exception& e) {
      // The measurement stays valid without a prediction; keep the reason visible.
      message += (message.empty() ? "" : "; ") + std::string("no prediction: ") + e.what();
    }
  }
  backend.release(r);
  finish(status, message);
  if (observer != nullptr) observer->progress(1.0, progress.label);
  return rec;
}

RunInfo make_run_info(const Backend& backend, int device, const std::string& command) {
  RunInfo info;
  info.tool_version = TILEPATH_VERSION;
  info.git_revision = build_git_revision();  // generated at build time
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) info.host = host;
  info.backend = backend.name();
  info.backend_version = backend.version();
  const auto& devices = backend.devices();
  if (device >= 0 && device < static_cast<int>(devices.size())) {
    const DeviceInfo& d = devices[static_cast<std::size_t>(device)];
    info.device = d.name;
    info.device_index = device;
    info.device_uid = d.uid;
  } else {
    info.device = "none";
  }
  info.command = command;
  return info;
}

RunInfo make_run_info(const Backend& backend, const RunSettings& settings, const std::string& command) {
  RunInfo info = make_run_info(backend, settings.device, command);
  if (settings.gpu_model.empty()) return info;
  std::string model_name;
  try {
    model_name = perf::load_gpu_model(settings.gpu_model).name;
  } catch (const std::exception&) {
    return info;  // not a model id this build knows: the backend will say so when it runs
  }
  // A simulating backend names each device after the GPU it models.
  for (const DeviceInfo& d : backend.devices())
    if (d.name == model_name + " (model)") info.device = d.name;
  return info;
}

}  // namespace tilepath
