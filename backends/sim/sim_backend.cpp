// The sim backend: a tilepath plugin whose "devices" are the GPU descriptions in
// models/gpus/*.json and whose "runs" are predictions of the stage-cost model
// (core/perf/cost_model.h). Nothing is executed, so there are no numerics:
// rel_l2 is NaN and passed is 1.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/abi/tilepath_backend.h"
#include "backends/abi/tilepath_plugin.h"
#include "core/operating_point.h"
#include "core/perf/cost_model.h"
#include "core/perf/gpu_model.h"

namespace {

using tilepath::perf::GpuModel;
using tilepath::plugin::copy_text;
using tilepath::plugin::finish;
using tilepath::plugin::ResultStorage;

// Plugin state. The host serialises calls into one plugin, so no locking.
struct SimState {
  std::vector<GpuModel> gpus;
  std::string no_device_reason;
};
SimState& state() {
  static SimState s;
  return s;
}

// Fields the host may leave out of an older, shorter tp_case.
bool case_has_gpu_model(const tp_case* c) { return TP_HAS_FIELD(c, tp_case, gpu_model); }

std::string known_ids() {
  std::string out;
  for (const auto& g : state().gpus) out += (out.empty() ? "" : ", ") + g.id;
  return out;
}

// The modelled GPU: tp_case::gpu_model (by id) overrides the device index.
const GpuModel* select_gpu(int32_t device, const tp_case* c, std::string& why) {
  auto& gpus = state().gpus;
  if (case_has_gpu_model(c) && c->gpu_model != nullptr && c->gpu_model[0] != '\0') {
    for (const auto& g : gpus) {
      if (g.id == c->gpu_model) return &g;
    }
    why = std::string("gpu_model: unknown GPU model '") + c->gpu_model + "'; allowed: " + known_ids();
    return nullptr;
  }
  if (gpus.empty()) {
    why = "no GPU models are loaded: " + state().no_device_reason;
    return nullptr;
  }
  if (device < 0 || device >= static_cast<int32_t>(gpus.size())) {
    why = "device: index " + std::to_string(device) + " is out of range; allowed: 0.." +
          std::to_string(static_cast<int>(gpus.size()) - 1);
    return nullptr;
  }
  return &gpus[device];
}

// Validates and converts the C case; on failure fills why and returns false.
bool to_operating_point(const tp_case* c, tilepath::OperatingPoint& op, std::string& why) {
  if (!TP_HAS_FIELD(c, tp_case, splits)) {
    why = "case: missing or too short (struct_size)";
    return false;
  }
  try {
    op = tilepath::from_tp_case(*c);
    op.validate();
  } catch (const std::exception& e) {
    why = e.what();
    return false;
  }
  return true;
}

int sim_init(char* error, size_t error_len) {
  auto& s = state();
  s.gpus.clear();
  s.no_device_reason.clear();
  try {
    s.gpus = tilepath::perf::load_gpu_models();
    if (s.gpus.empty()) s.no_device_reason = "no GPU model files (*.json) in " + tilepath::perf::models_dir() + "/gpus";
  } catch (const std::exception& e) {
    // A broken or missing models directory is not fatal: report zero devices and why.
    s.no_device_reason = std::string("GPU models could not be loaded: ") + e.what();
  }
  copy_text(error, error_len, "");
  return 0;
}

void sim_shutdown() {
  state().gpus.clear();
  state().no_device_reason.clear();
}

int32_t sim_device_count() { return static_cast<int32_t>(state().gpus.size()); }

const char* sim_no_device_reason() { return state().no_device_reason.c_str(); }

int sim_device_info(int32_t device, tp_device_info* out) {
  auto& gpus = state().gpus;
  if (out == nullptr || device < 0 || device >= static_cast<int32_t>(gpus.size())) return 1;
  if (out->struct_size < offsetof(tp_device_info, uid)) return 1;  // this major's .0 layout is the oldest
  const GpuModel& g = gpus[device];
  copy_text(out->name, g.name + " (model)");
  copy_text(out->arch, g.arch);
  out->sm_count = g.sm_count;
  out->memory_bytes = static_cast<uint64_t>(g.memory_bytes);
  out->bandwidth_gbps = g.read_bandwidth_gbps;
  out->l2_bytes = static_cast<uint64_t>(g.l2_bytes);
  out->clock_mhz = g.clock_mhz;
  if (out->struct_size >= sizeof(tp_device_info)) {  // ABI 2.6
    copy_text(out->uid, "model:" + g.id);
    out->struct_size = sizeof(tp_device_info);
  }
  return 0;
}

int sim_supports(int32_t device, const tp_case* c, char* why, size_t why_len) {
  std::string reason;
  tilepath::OperatingPoint op;
  if (!to_operating_point(c, op, reason)) {
    copy_text(why, why_len, reason);
    return 0;
  }
  const GpuModel* gpu = select_gpu(device, c, reason);
  if (gpu == nullptr) {
    copy_text(why, why_len, reason);
    return 0;
  }
  const auto estimate = tilepath::perf::estimate_costs(op, *gpu);
  copy_text(why, why_len, estimate.supported ? "" : estimate.why_unsupported);
  return estimate.supported ? 1 : 0;
}

bool cancelled(const tp_run_options* options) {
  if (options == nullptr) return false;
  if (!TP_HAS_FIELD(options, tp_run_options, cancel)) return false;
  return options->cancel != nullptr && *options->cancel != 0;
}

// Calls the progress callback; returns true when it asks to cancel.
bool report_progress(const tp_run_options* options, double fraction, const char* phase) {
  if (!TP_HAS_FIELD(options, tp_run_options, progress_user)) return false;
  if (options->progress == nullptr) return false;
  return options->progress(options->progress_user, fraction, phase) != 0;
}

void fill_result(const tilepath::OperatingPoint& op, const GpuModel& gpu, const tilepath::perf::CostEstimate& e,
                 tp_result* out) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  out->latency_us = e.latency_us;
  out->latency_min_us = e.latency_us;  // a model has no run-to-run spread
  out->latency_max_us = e.latency_us;
  out->repeats = 1;
  out->tile_interval_us = e.ii_us;
  out->tile_tokens = e.tile_tokens;
  out->bytes_moved = e.bytes_moved;
  out->read_bandwidth_gbps = e.read_bandwidth_gbps;
  out->floor_fraction = e.latency_us > 0 ? e.floor_us / e.latency_us : nan;
  copy_text(out->kernel_name, "sim:" + gpu.id + ":" + op.variant_label());
  copy_text(out->cubin_sha256, "");
  out->regs_per_thread = 0;  // not modelled
  out->smem_static_bytes = 0;
  out->smem_dynamic_bytes = e.smem_bytes_per_cta;
  // Threads-only occupancy bound (registers are not modelled); 2048 threads per SM/CU assumed.
  out->occupancy_theoretical = std::min(1.0, e.ctas_per_sm * e.block_threads / 2048.0);
  out->occupancy_achieved = nan;
  // Modelled launch: one CTA per (split, kv head, request).
  out->grid[0] = e.splits;
  out->grid[1] = op.kv_heads;
  out->grid[2] = op.batch;
  out->block[0] = e.block_threads;
  out->block[1] = 1;
  out->block[2] = 1;
  out->splits = e.splits;
  out->rel_l2_error = nan;  // nothing is computed, so there is no output to compare
  out->max_abs_error = nan;
  out->tolerance = nan;
  out->passed = 1;
}

void attach_storage(const tilepath::OperatingPoint& op, const GpuModel& gpu, const tilepath::perf::CostEstimate& e,
                    tp_result* out) {
  auto storage = std::make_unique<ResultStorage>();
  // The model's per-tile costs; a stage it gives none stays absent (unknown).
  for (int s = 0; s < TP_STAGE_COUNT; ++s)
    if (std::isfinite(e.per_tile_us.us[s])) storage->add_stage_cost(s, TP_COST_MODEL, e.per_tile_us.us[s]);
  storage->add_metric("ctas", e.ctas, "");
  storage->add_metric("concurrent_ctas", e.concurrent_ctas, "");
  storage->add_metric("ctas_per_sm", e.ctas_per_sm, "");
  storage->add_metric("tiles_per_cta", static_cast<double>(e.tiles_per_cta), "");
  storage->add_metric("tiles_walked", e.tiles_walked, "");
  storage->add_metric("fill", e.fill_us, "us");
  storage->add_metric("once_per_step", e.once_per_step_us, "us");
  storage->add_metric("launch_overhead", e.launch_overhead_us, "us");
  storage->add_metric("floor", e.floor_us, "us");
  storage->add_metric("served_from_l2", e.served_from_l2 ? 1.0 : 0.0, "bool");

  nlohmann::json j;
  j["gpu_model"] = gpu.id;
  j["case"] = tilepath::to_json(op);
  j["ii_us"] = e.ii_us;
  j["limiting_stage"] = std::string(tilepath::to_string(e.limiting_stage));
  j["qk_matrix_path"] = e.qk_matrix_path;
  j["pv_matrix_path"] = e.pv_matrix_path;
  j["smem_bytes_per_cta"] = e.smem_bytes_per_cta;
  j["notes"] = e.notes;
  storage->add_artifact("sim-estimate.json", "application/json", j.dump(2));
  ResultStorage::attach(*out, std::move(storage));
}

int sim_run_case(int32_t device, const tp_case* c, const tp_run_options* options, tp_result* out) {
  if (out == nullptr || out->struct_size < sizeof(tp_result)) return TP_ERR_INVALID;
  std::string reason;
  tilepath::OperatingPoint op;
  if (!to_operating_point(c, op, reason)) return finish(out, TP_ERR_INVALID, reason);
  const GpuModel* gpu = select_gpu(device, c, reason);
  if (gpu == nullptr) return finish(out, TP_ERR_INVALID, reason);
  if (cancelled(options) || report_progress(options, 0.0, "model")) return finish(out, TP_ERR_CANCELLED, "cancelled");

  tilepath::perf::CostEstimate estimate;
  try {
    estimate = tilepath::perf::estimate_costs(op, *gpu);
  } catch (const std::exception& e) {
    return finish(out, TP_ERR_INVALID, e.what());
  }
  if (!estimate.supported) return finish(out, TP_ERR_UNSUPPORTED, estimate.why_unsupported);
  if (cancelled(options) || report_progress(options, 0.5, "model")) return finish(out, TP_ERR_CANCELLED, "cancelled");

  fill_result(op, *gpu, estimate, out);
  attach_storage(op, *gpu, estimate, out);
  report_progress(options, 1.0, "done");
  return finish(out, TP_OK, "predicted by the sim cost model (" + gpu->id + "): " + estimate.notes);
}

void sim_release_result(tp_result* r) {
  if (r != nullptr) ResultStorage::release(*r);
}

const tp_backend_api kApi = {
    sizeof(tp_backend_api),
    TILEPATH_ABI_MAJOR,
    TILEPATH_ABI_MINOR,
    "sim",
    "0.1.0",
    sim_init,
    sim_shutdown,
    sim_device_count,
    sim_no_device_reason,
    sim_device_info,
    sim_supports,
    sim_run_case,
    sim_release_result,
    nullptr,  // kernel_count: the model runs no kernel
    nullptr,
};

}  // namespace

extern "C" TP_EXPORT const tp_backend_api* tilepath_backend_entry(uint32_t host_major, uint32_t /*host_minor*/) {
  return host_major == TILEPATH_ABI_MAJOR ? &kApi : nullptr;
}
