// The cpu backend's C ABI: one device (this machine's processor), real tiled decode
// attention with bit-exact FP8 emulation, measured the way the GPU backends are.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/abi/tilepath_backend.h"
#include "backends/abi/tilepath_plugin.h"
#include "backends/abi/tilepath_plugin_gate.h"
#include "backends/cpu/case_measurement.h"
#include "backends/cpu/cpu_device.h"
#include "backends/cpu/decode_kernel.h"
#include "backends/cpu/read_bandwidth.h"
#include "backends/cpu/tile_stages.h"
#include "core/operating_point.h"

namespace tilepath::cpu {
namespace {

using plugin::copy_text;
using plugin::finish;
using plugin::requested_keys;
using plugin::ResultStorage;
using plugin::set_check_rows;
using plugin::set_gate;
using plugin::set_key_distribution;

// The cache (K + V elements, padding excluded) that one case may hold: the default
// 64 x 4096 x 8 heads x 128 dims case exactly, which is 0.5 GiB of FP8 cache and
// 1 GiB of BF16 cache. Beyond it a run takes too long and too much memory for a CPU.
constexpr long long kMaxKvElements = 1LL << 29;

constexpr const char* kPluginVersion = "0.1.0";

struct PluginState {
  bool initialised = false;
  CpuDevice device;
  double bandwidth_gbps = 0;
  std::unique_ptr<ReadBandwidthProbe> run_bandwidth_probe;  // 256 MiB, allocated by the first run_case
};
PluginState& state() {
  static PluginState s;
  return s;
}

std::string unsupported_reason(const OperatingPoint& op) {
  // The CPU has no matrix instruction: it emulates mma_sync's numerics (products of the
  // converted operands accumulated in FP32). wgmma's FP8 accumulation on Hopper is not
  // documented bit-exactly, so it cannot be emulated bit-exactly.
  if (op.mma != Mma::mma_sync)
    return "mma: the cpu backend emulates mma_sync's numerics (FP32 accumulation); " + std::string(to_string(op.mma)) +
           "'s FP8 accumulation is not documented bit-exactly, so it cannot be emulated; allowed: mma_sync";
  if (op.rope == RopeLayout::pre_rope && !(k_is_fp8(op.kv) && op.k_path == KPath::transform)) {
    // Only k_prep reconstructs K on the way to QK; BF16 K and fp8_qk consume the cache as stored.
    return "rope: pre_rope needs k_prep to rotate the reconstructed K (an FP8 K cache with k_path transform); "
           "allowed for " +
           op.variant_label() + ": post_rope";
  }
  const long long kv_elements = op.total_tokens() * op.kv_heads * op.head_dim * 2;
  if (kv_elements > kMaxKvElements) {
    return "cpu backend: the K+V cache has " + std::to_string(kv_elements) +
           " elements (2*total_tokens*kv_heads*head_dim), above the cap of " + std::to_string(kMaxKvElements) +
           " (kMaxKvElements: batch 64 x context 4096 x 8 kv heads x 128 dims)";
  }
  return "";
}

// ---- ABI functions ----

int cpu_init(char* error, size_t error_len) {
  if (!e4m3_fast_decode_matches_table()) {
    copy_text(error, error_len, "cpu backend: the vectorized E4M3 decode disagrees with the reference table");
    return 1;
  }
  auto& s = state();
  if (!s.initialised) {
    s.device = probe_cpu_device();
    // A quick (64 MiB) ceiling for device_info; run_case measures the full one every run.
    s.bandwidth_gbps = measure_read_bandwidth_gbps(s.device.hardware_threads, std::size_t{64} << 20, 2);
    s.initialised = true;
  }
  return 0;
}

void cpu_shutdown(void) {
  state().run_bandwidth_probe.reset();
  state().initialised = false;
}

// Device 0: this processor with the OCP E4M3 numerics of the CUDA path. Device 1: the same
// processor emulating gfx942's numerics (E4M3 FNUZ cache, Q and P quantized to FNUZ) so the
// HIP path's numbers can be checked without an AMD GPU.
constexpr int kFnuzDevice = 1;
int32_t cpu_device_count(void) { return 2; }

// Why device 1 cannot run op ("" when it can): the HIP kernels' plain, post-RoPE cache.
std::string fnuz_unsupported_reason(const OperatingPoint& op) {
  if (op.k_repr != KRepr::plain)
    return "k_repr: device 1 (gfx942 numerics) emulates the HIP kernels, which take a plain cache; allowed: plain";
  if (op.rope != RopeLayout::post_rope)
    return "rope: device 1 (gfx942 numerics) takes a post-RoPE cache; allowed: post_rope";
  return "";
}

const char* cpu_no_device_reason(void) { return ""; }

int cpu_device_info(int32_t device, tp_device_info* out) {
  if ((device != 0 && device != kFnuzDevice) || out == nullptr) return 1;
  if (!state().initialised) cpu_init(nullptr, 0);
  const auto& s = state();
  tp_device_info info{};
  info.struct_size = sizeof(tp_device_info);
  copy_text(info.name, device == kFnuzDevice ? s.device.name + " (E4M3 FNUZ numerics of gfx942)" : s.device.name);
  copy_text(info.arch, "x86_64");
  info.sm_count = s.device.hardware_threads;
  info.memory_bytes = s.device.memory_bytes;
  info.bandwidth_gbps = s.bandwidth_gbps;
  info.l2_bytes = s.device.l2_bytes;
  info.clock_mhz = s.device.clock_mhz;
  copy_text(info.uid, "cpu:" + std::to_string(device));
  // Copy only what the host's (possibly older) struct has room for, and say how much.
  const std::size_t size = std::min<std::size_t>(out->struct_size, sizeof(tp_device_info));
  std::memcpy(out, &info, size);
  out->struct_size = static_cast<uint32_t>(size);
  return 0;
}

int cpu_supports(int32_t device, const tp_case* c, char* why, size_t why_len) {
  if (device != 0 && device != kFnuzDevice) {
    copy_text(why, why_len,
              "cpu backend: device " + std::to_string(device) + " does not exist (0: OCP E4M3, 1: gfx942 numerics)");
    return 0;
  }
  if (c == nullptr) {
    copy_text(why, why_len, "cpu backend: no case given");
    return 0;
  }
  try {
    const OperatingPoint op = from_tp_case(*c);
    op.validate();
    std::string reason = unsupported_reason(op);
    if (reason.empty() && device == kFnuzDevice) reason = fnuz_unsupported_reason(op);
    copy_text(why, why_len, reason);
    return reason.empty() ? 1 : 0;
  } catch (const std::exception& e) {
    copy_text(why, why_len, e.what());
    return 0;
  }
}

void fill_result(const OperatingPoint& op, const CaseMeasurement& m, int threads, tp_result* out) {
  out->latency_us = m.latency_median_us;
  out->latency_min_us = m.latency_min_us;
  out->latency_max_us = m.latency_max_us;
  out->repeats = static_cast<int32_t>(m.latencies_us.size());
  out->tile_interval_us = m.tile_interval_us;
  out->tile_tokens = kTileTokens;
  out->bytes_moved = op.bytes_moved();
  out->read_bandwidth_gbps = m.read_bandwidth_gbps;
  out->floor_fraction = (out->bytes_moved / (m.read_bandwidth_gbps * 1e9) * 1e6) / m.latency_median_us;
  copy_text(out->kernel_name, kernel_name(op));
  copy_text(out->cubin_sha256, "");
  out->grid[0] = op.batch;
  out->grid[1] = op.kv_heads;
  out->grid[2] = m.splits;
  out->block[0] = threads;
  out->block[1] = 1;
  out->block[2] = 1;
  out->splits = m.splits;
  out->rel_l2_error = m.error.rel_l2;
  out->max_abs_error = m.error.max_abs;
  out->tolerance = m.tolerance;
  out->passed = m.error.rel_l2 <= m.tolerance ? 1 : 0;
  set_check_rows(out, m.verified_requests * op.kv_heads, op.batch * op.kv_heads);
  set_gate(out, m.gate);

  auto storage = std::make_unique<ResultStorage>();
  for (int method = 0; method < TP_COST_METHOD_COUNT; ++method)
    for (int stage = 0; stage < TP_STAGE_COUNT; ++stage)
      if (std::isfinite(m.stage_cost_us[method][stage]))
        storage->add_stage_cost(stage, method, m.stage_cost_us[method][stage]);
  storage->add_metric("threads", threads, "");
  storage->add_metric("work_items", m.work_items, "");
  storage->add_metric("tiles", static_cast<double>(m.tiles), "");
  storage->add_metric("problem_generation_ms", m.generation_ms, "ms");
  storage->add_metric("reference_ms", m.reference_ms, "ms");
  storage->add_metric("bandwidth_buffer_mib", static_cast<double>(kBandwidthBufferBytes >> 20), "MiB");
  storage->add_artifact("samples.json", "application/json", m.samples.dump(2));
  ResultStorage::attach(*out, std::move(storage));
}

int cpu_run_case(int32_t device, const tp_case* c, const tp_run_options* options, tp_result* out) {
  if (out == nullptr) return TP_ERR_INVALID;
  if (!state().initialised) cpu_init(nullptr, 0);
  if (device != 0 && device != kFnuzDevice)
    return finish(out, TP_ERR_INVALID,
                  "device: " + std::to_string(device) + " does not exist; allowed: 0 (OCP E4M3), 1 (gfx942 numerics)");
  if (c == nullptr) return finish(out, TP_ERR_INVALID, "case: NULL");

  OperatingPoint op;
  try {
    op = from_tp_case(*c);
    op.validate();
  } catch (const std::exception& e) {
    return finish(out, TP_ERR_INVALID, e.what());
  }
  if (const std::string reason = unsupported_reason(op); !reason.empty())
    return finish(out, TP_ERR_UNSUPPORTED, reason);
  if (device == kFnuzDevice)
    if (const std::string reason = fnuz_unsupported_reason(op); !reason.empty())
      return finish(out, TP_ERR_UNSUPPORTED, reason);

  if (const std::string why = plugin::launch_count_problem(options); !why.empty())
    return finish(out, TP_ERR_INVALID, why);
  MeasureOptions measure;
  measure.threads = state().device.hardware_threads;
  measure.fnuz = device == kFnuzDevice;
  tp_progress_fn progress_fn = nullptr;
  void* progress_user = nullptr;
  const volatile int32_t* cancel = nullptr;
  if (TP_HAS_FIELD(options, tp_run_options, warmup)) measure.warmup = std::max(0, options->warmup);
  if (TP_HAS_FIELD(options, tp_run_options, repeats)) measure.repeats = std::max(1, options->repeats);
  if (TP_HAS_FIELD(options, tp_run_options, ablations)) measure.ablations = options->ablations;
  if (TP_HAS_FIELD(options, tp_run_options, seed)) measure.seed = options->seed;
  if (TP_HAS_FIELD(options, tp_run_options, save_tensors_dir) && options->save_tensors_dir != nullptr) {
    measure.save_tensors_dir = options->save_tensors_dir;
  }
  if (TP_HAS_FIELD(options, tp_run_options, progress)) progress_fn = options->progress;
  if (TP_HAS_FIELD(options, tp_run_options, progress_user)) progress_user = options->progress_user;
  if (TP_HAS_FIELD(options, tp_run_options, cancel)) cancel = options->cancel;
  std::string why;
  auto keys = requested_keys(options, &why);
  if (!keys) return finish(out, TP_ERR_INVALID, why);
  measure.keys = keys->dist;
  measure.key_model = std::move(keys->model);
  set_key_distribution(out, measure.keys);

  RunProgress progress(progress_fn, progress_user, cancel, progress_units(measure));
  CaseMeasurement m;
  try {
    auto& probe = state().run_bandwidth_probe;
    if (!probe) probe = std::make_unique<ReadBandwidthProbe>();
    m = measure_case(op, measure, progress, *probe);
  } catch (const std::bad_alloc&) {
    return finish(out, TP_ERR_RUNTIME, "cpu backend: out of memory for " + op.key());
  } catch (const std::exception& e) {
    return finish(out, TP_ERR_RUNTIME, std::string("cpu backend: ") + e.what());
  }
  if (m.status == TP_ERR_CANCELLED) return finish(out, m.status, m.message);
  fill_result(op, m, measure.threads, out);
  return finish(out, m.status, m.message);
}

void cpu_release_result(tp_result* r) {
  if (r != nullptr) ResultStorage::release(*r);
}

const tp_backend_api kApi = {
    sizeof(tp_backend_api),
    TILEPATH_ABI_MAJOR,
    TILEPATH_ABI_MINOR,
    "cpu",
    kPluginVersion,
    cpu_init,
    cpu_shutdown,
    cpu_device_count,
    cpu_no_device_reason,
    cpu_device_info,
    cpu_supports,
    cpu_run_case,
    cpu_release_result,
    nullptr,  // kernel_count: no device binaries to list
    nullptr,
};

}  // namespace
}  // namespace tilepath::cpu

extern "C" TP_EXPORT const tp_backend_api* tilepath_backend_entry(uint32_t host_major, uint32_t host_minor) {
  (void)host_minor;  // any minor works: readers honour struct_size
  return host_major == TILEPATH_ABI_MAJOR ? &tilepath::cpu::kApi : nullptr;
}
