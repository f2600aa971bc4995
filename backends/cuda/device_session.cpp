#include "backends/cuda/device_session.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "backends/abi/tilepath_plugin_gate.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/event_timer.h"
#include "backends/cuda/kernel_metadata.h"
#include "backends/cuda/output_check.h"
#include "backends/cuda/sass_opcode_counts.h"
#include "backends/cuda/stage_cost_derivation.h"
#include "core/numerics/fp8.h"
#include "core/stage.h"

namespace tilepath::cuda {
namespace {

// Stages with a remove/twice ablation; a variant without a stage's ablation kernels
// leaves that cost unknown.
constexpr int kAblatedStages[] = {TP_STAGE_K_PREP, TP_STAGE_QK, TP_STAGE_SOFTMAX,
                                  TP_STAGE_V_PREP, TP_STAGE_PV, TP_STAGE_K_BIAS};
// Stages with an isolated kernel timed at both contexts (combine alone: once).
constexpr int kIsolatedTileStages[] = {TP_STAGE_K_LOAD,  TP_STAGE_K_PREP, TP_STAGE_QK,     TP_STAGE_K_BIAS,
                                       TP_STAGE_SOFTMAX, TP_STAGE_V_LOAD, TP_STAGE_V_PREP, TP_STAGE_PV,
                                       TP_STAGE_ACCUM,   TP_STAGE_Q_QUANT};

std::string isolated_label(int stage) { return "isolate_" + std::string(to_string(Stage(stage))); }

std::vector<int> lengths_of(const OperatingPoint& op) {
  if (!op.context_lengths.empty()) return op.context_lengths;
  return std::vector<int>(op.batch, op.context);
}

}  // namespace

std::string unsupported_reason(const OperatingPoint& op, int device) {
  try {
    op.validate();
  } catch (const ValidationError& e) {
    return e.what();
  }
  if (op.rope != RopeLayout::post_rope) return "rope: the CUDA kernels apply no RoPE to cached K; allowed: post_rope";
  // A post-RoPE prebias cache holds K_t - RoPE_t(b); the k_bias stage adds q.RoPE_t(b).
  if (op.k_repr == KRepr::prebias && !(op.kv == KvDtype::k8v8 && op.head_dim == 128 && op.k_path != KPath::k16 &&
                                       op.mode != TransformMode::separate_kv))
    return "k_repr: the CUDA prebias kernels (the k_bias stage) are K8/V8, head_dim 128, k_path transform or fp8_qk, "
           "mode full or k_only; got " +
           op.variant_label() + " head_dim " + std::to_string(op.head_dim) +
           " (every prebias variant runs on the cpu backend and in tilepath gate)";
  if (op.k_repr == KRepr::mxfp8)
    return "k_repr: Hopper has no block-scaled MMA; the CUDA kernels take plain (mxfp8's numerics: tilepath "
           "gate)";
  if (op.mma == Mma::wgmma) {
    // Every dtype control and K path has wgmma kernels, but no converter warps (separate_kv) or prebias.
    const bool compiled = op.k_repr == KRepr::plain && op.mode != TransformMode::separate_kv;
    if (!compiled)
      return "mma: the CUDA wgmma kernels take k_repr plain and every mode but separate_kv; got " + op.variant_label() +
             " (those run with mma mma_sync)";
  }
  const DecodeArgs args = decode_shape_args(op, op.splits);
  if (!decode_variant_available(args, Ablation{}))
    return "no CUDA kernel compiled for kv=" + std::string(to_string(op.kv)) +
           " k_path=" + std::string(to_string(op.k_path)) + " mode=" + std::string(to_string(op.mode)) +
           " mma=" + std::string(to_string(op.mma)) + " head_dim=" + std::to_string(op.head_dim);
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    cudaGetLastError();
    return "device " + std::to_string(device) + " does not exist";
  }
  double pages = 0;
  for (int len : lengths_of(op)) pages += (len + op.page_size - 1) / op.page_size;
  const double cache_bytes =
      pages * op.page_size * op.kv_heads * op.head_dim * ((k_is_fp8(op.kv) ? 1 : 2) + (v_is_fp8(op.kv) ? 1 : 2));
  // Leave room for the flush buffer, the read-bandwidth buffer and workspaces.
  const double usable = double(prop.totalGlobalMem) - 6.0 * (1ull << 30);
  if (cache_bytes > usable) {
    char sizes[2][32];
    std::snprintf(sizes[0], sizeof(sizes[0]), "%.1f", cache_bytes / (1ull << 30));
    std::snprintf(sizes[1], sizeof(sizes[1]), "%.1f", usable / (1ull << 30));
    return std::string("the KV cache needs ") + sizes[0] + " GiB; device " + std::to_string(device) + " (" + prop.name +
           ") has " + sizes[1] + " GiB usable";
  }
  return {};
}

DeviceSession::DeviceSession(int device) : device_(device) {
  TP_CUDA_CHECK(cudaSetDevice(device_));
  TP_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_));
  TP_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

DeviceSession::~DeviceSession() {
  if (stream_) cudaStreamDestroy(stream_);
}

const ReadBandwidth& DeviceSession::read_bandwidth() {
  if (!read_bandwidth_) {
    TP_CUDA_CHECK(cudaSetDevice(device_));
    read_bandwidth_ = measure_read_bandwidth(device_, stream_, stream_buffer_);
  }
  return *read_bandwidth_;
}

void DeviceSession::run(const OperatingPoint& op, const tp_run_options& options, tp_result& out,
                        plugin::ResultStorage& storage) {
  const plugin::PhaseReporter report(options);
  if (std::string why = unsupported_reason(op, device_); !why.empty()) throw plugin::UnsupportedCase(why);
  TP_CUDA_CHECK(cudaSetDevice(device_));
  const std::uint64_t seed =
      options.seed ? options.seed : (std::uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  const int warmup = options.warmup > 0 ? options.warmup : 5;
  const int repeats = options.repeats > 0 ? options.repeats : 20;
  const bool cold = op.cache == CacheState::hbm_cold;
  const bool save_tensors = options.save_tensors_dir && options.save_tensors_dir[0];

  // ---- inputs -------------------------------------------------------------
  report(0.0, "generate inputs");
  std::string why_keys;
  const auto keys = plugin::key_distribution(&options, &why_keys);
  if (!keys) throw std::invalid_argument(why_keys);
  const HostDecodeCase host = make_host_case(op, seed, /*allow_tiling=*/!save_tensors, kTileAboveHostBytes, *keys);
  const std::vector<int> lengths(host.lengths.begin(), host.lengths.end());
  const int max_len = *std::max_element(lengths.begin(), lengths.end());
  const int splits = op.splits > 0 ? op.splits : choose_splits(decode_shape_args(op, 1), max_len, sm_count_);
  report(0.1, "upload inputs");
  DecodeArgs args;
  inputs_.upload(host, splits, stream_, args);

  // ---- correctness: poison, one launch, every element written, vs float64 ---
  report(0.2, "correctness");
  inputs_.poison_output(stream_);
  KernelInfo info;
  TP_CUDA_CHECK(launch_decode(args, Ablation{}, stream_, &info));
  TP_CUDA_CHECK(cudaStreamSynchronize(stream_));
  const std::vector<std::uint16_t> output = inputs_.download_output(stream_);
  const OutputCheck check = check_output(host, output, seed);
  if (save_tensors) {
    std::vector<float> output_f(output.size());
    std::transform(output.begin(), output.end(), output_f.begin(), numerics::bf16_to_float);
    numerics::save_problem_npy(host.source, output_f, options.save_tensors_dir);
  }
  const KernelMetadata meta = describe_kernel(info, device_);

  // ---- timing ---------------------------------------------------------------
  report(0.3, "read bandwidth");
  const ReadBandwidth& bandwidth = read_bandwidth();
  if (cold) flusher_.prepare(device_, stream_);
  const std::function<void()> flush =
      cold ? std::function<void()>([this] { flusher_.flush(stream_); }) : std::function<void()>();
  nlohmann::json timings = nlohmann::json::object();
  // The case latency uses the requested warm-up (and at least kMinWarmupMs of device
  // work) and repeats; the ablation and partner-context variants (differences, not
  // reported latencies; they run right after it on a warm GPU) use half the repeats
  // (at least 10) and at most 2 warm-ups to keep sweeps inside a lease.
  const auto time_variant = [&](const Ablation& ablation, const std::string& label) {
    const bool is_case_latency = label == "full";
    const TimingStats stats =
        time_launches([&] { TP_CUDA_CHECK(launch_decode(args, ablation, stream_, nullptr)); }, flush, stream_,
                      is_case_latency ? warmup : std::min(warmup, 2),
                      is_case_latency ? repeats : std::max(10, repeats / 2), is_case_latency ? kMinWarmupMs : 0.0);
    // Every sample of the case latency; the summary only for the other variants
    // (keeps the bundled database small).
    timings[label] = {
        {"median_us", stats.median_us}, {"min_us", stats.min_us}, {"max_us", stats.max_us}, {"repeats", stats.repeats}};
    if (is_case_latency) timings[label]["samples_us"] = stats.samples_us;
    return stats;
  };
  report(0.35, "time full kernel");
  const TimingStats main = time_variant(Ablation{}, "full");
  // The read kernel over the same byte count, cache state and repeats: a perfect stream
  // of this case, launch and ramp included (small cases sit well below the bandwidth
  // floor fraction for that reason alone). Up to the read-bandwidth buffer's size.
  double stream_same_bytes_us = NAN;
  if (op.bytes_moved() <= double(stream_buffer_.capacity())) {
    report(0.4, "stream of the same bytes");
    const TimingStats stream = time_stream_read(stream_buffer_, std::size_t(op.bytes_moved()), device_, stream_, flush,
                                                std::min(warmup, 2), repeats, 0.0);
    stream_same_bytes_us = stream.median_us;
    timings["stream_same_bytes"] = {{"median_us", stream.median_us},
                                    {"min_us", stream.min_us},
                                    {"max_us", stream.max_us},
                                    {"repeats", stream.repeats}};
  }

  AblationLatencies latencies;
  latencies.full_us = main.median_us;
  TileGeometry geometry;
  geometry.tiles = tiles_per_cta(lengths, splits, meta.tile_tokens);
  geometry.waves = std::max(1, meta.waves);
  const bool want_interval = (options.ablations & (TP_ABLATE_TILE_INTERVAL | TP_ABLATE_STAGE_COSTS)) != 0;
  const bool want_costs = (options.ablations & TP_ABLATE_STAGE_COSTS) != 0;
  const Ablation load_only{AblationKind::load_only, -1};
  const bool has_load_only = decode_variant_available(args, load_only);
  const Ablation compute_only{AblationKind::compute_only, -1};
  const bool has_compute_only = decode_variant_available(args, compute_only);
  // Ablations only for correct kernels: a failed case is stored as failed anyway.
  if (check.passed && want_interval) {
    const std::vector<int> partner = slope_partner_lengths(lengths, splits, meta.tile_tokens);
    geometry.tiles_partner = tiles_per_cta(partner, splits, meta.tile_tokens);
    const bool longer = *std::max_element(partner.begin(), partner.end()) > max_len;
    if (geometry.tiles_partner != geometry.tiles) {
      report(0.45, "tile interval (partner context)");
      if (longer) {
        // More tokens than the case's cache holds: a cache of the longer lengths, same grid.
        OperatingPoint partner_op = op;
        partner_op.context = *std::max_element(partner.begin(), partner.end());
        if (!op.context_lengths.empty()) partner_op.context_lengths = partner;
        const HostDecodeCase partner_host =
            make_host_case(partner_op, seed, /*allow_tiling=*/true, kTileAboveHostBytes, *keys);
        inputs_.upload(partner_host, splits, stream_, args);
      } else {
        inputs_.set_lengths(std::vector<std::int32_t>(partner.begin(), partner.end()), stream_, args);
      }
      latencies.full_partner_us = time_variant(Ablation{}, "full_partner_context").median_us;
      if (want_costs && has_load_only)
        latencies.load_only_partner_us = time_variant(load_only, "load_only_partner_context").median_us;
      if (want_costs && has_compute_only)
        latencies.compute_only_partner_us = time_variant(compute_only, "compute_only_partner_context").median_us;
      if (want_costs) {
        for (int stage : kIsolatedTileStages) {
          const Ablation isolate{AblationKind::isolate, stage};
          if (!decode_variant_available(args, isolate)) continue;
          const std::string label = isolated_label(stage) + "_partner_context";
          report(0.45, label.c_str());
          latencies.isolated_partner_us[stage] = time_variant(isolate, label).median_us;
        }
      }
      if (longer) {
        inputs_.upload(host, splits, stream_, args);
      } else {
        inputs_.set_lengths(host.lengths, stream_, args);
      }
    }
  }
  if (check.passed && want_costs) {
    int done = 0;
    for (int stage : kAblatedStages) {
      for (AblationKind kind : {AblationKind::remove, AblationKind::twice}) {
        const Ablation ablation{kind, stage};
        ++done;
        if (!decode_variant_available(args, ablation)) continue;
        const std::string label =
            std::string(kind == AblationKind::remove ? "remove_" : "twice_") + std::string(to_string(Stage(stage)));
        report(0.5 + 0.45 * done / 10.0, label.c_str());
        const double median = time_variant(ablation, label).median_us;
        (kind == AblationKind::remove ? latencies.removed_us : latencies.twice_us)[stage] = median;
        storage.add_metric("latency_" + label + "_us", median, "us");
      }
    }
    // One side of the kernel measured whole: its latency and its slope per tile.
    const auto time_side = [&](const Ablation& ablation, const std::string& name, double& latency,
                               double (*interval_of)(const AblationLatencies&, const TileGeometry&), double progress) {
      report(progress, name.c_str());
      latency = time_variant(ablation, name).median_us;
      storage.add_metric("latency_" + name + "_us", latency, "us");
      const double interval = interval_of(latencies, geometry);
      if (std::isfinite(interval)) storage.add_metric("tile_interval_" + name + "_us", interval, "us");
    };
    // K and V streaming together with no compute: the memory side's own tile interval.
    if (has_load_only) time_side(load_only, "load_only", latencies.load_only_us, load_only_interval_us, 0.8);
    // Every compute stage in turn with no ring to wait for: the compute side's own tile interval.
    if (has_compute_only)
      time_side(compute_only, "compute_only", latencies.compute_only_us, compute_only_interval_us, 0.82);
    for (int stage : kIsolatedTileStages) {
      const Ablation isolate{AblationKind::isolate, stage};
      // Only with its partner-context run: an isolated cost is the slope of the two.
      if (!std::isfinite(latencies.isolated_partner_us[stage]) || !decode_variant_available(args, isolate)) continue;
      const std::string label = isolated_label(stage);
      report(0.85, label.c_str());
      latencies.isolated_us[stage] = time_variant(isolate, label).median_us;
      storage.add_metric("latency_" + label + "_us", latencies.isolated_us[stage], "us");
    }
    const Ablation combine_alone{AblationKind::isolate, TP_STAGE_COMBINE};
    if (decode_variant_available(args, combine_alone)) {
      report(0.97, "isolate_combine");
      latencies.isolated_us[TP_STAGE_COMBINE] = time_variant(combine_alone, "isolate_combine").median_us;
      storage.add_metric("latency_isolate_combine_us", latencies.isolated_us[TP_STAGE_COMBINE], "us");
    }
  }
  report(1.0, "done");

  // ---- result ---------------------------------------------------------------
  out.latency_us = main.median_us;
  out.latency_min_us = main.min_us;
  out.latency_max_us = main.max_us;
  out.repeats = main.repeats;
  out.tile_tokens = meta.tile_tokens;
  out.tile_interval_us = tile_interval_us(latencies, geometry);
  for (const tp_stage_cost& c : derive_stage_costs(latencies, geometry))
    storage.add_stage_cost(c.stage, c.method, c.cost_us);
  out.bytes_moved = op.bytes_moved();
  out.read_bandwidth_gbps = bandwidth.gbps;
  out.floor_fraction = (out.bytes_moved / (bandwidth.gbps * 1e9)) / (main.median_us * 1e-6);

  plugin::copy_text(out.kernel_name, meta.name);
  plugin::copy_text(out.cubin_sha256, meta.cubin_sha256);
  out.regs_per_thread = meta.regs_per_thread;
  out.smem_static_bytes = meta.smem_static_bytes;
  out.smem_dynamic_bytes = meta.smem_dynamic_bytes;
  out.occupancy_theoretical = meta.occupancy_theoretical;
  out.grid[0] = int(meta.grid.x), out.grid[1] = int(meta.grid.y), out.grid[2] = int(meta.grid.z);
  out.block[0] = int(meta.block.x), out.block[1] = int(meta.block.y), out.block[2] = int(meta.block.z);
  out.splits = args.splits;

  out.rel_l2_error = check.rel_l2;
  out.max_abs_error = check.max_abs;
  out.tolerance = check.tolerance;
  out.passed = check.passed ? 1 : 0;
  out.status = check.passed ? TP_OK : TP_ERR_WRONG_RESULT;
  plugin::set_check_rows(&out, check.rows_checked, check.rows_total);
  plugin::set_gate(&out, check.gate);
  plugin::set_key_distribution(&out, *keys);
  char message[512];
  if (check.passed) {
    std::snprintf(message, sizeof(message), "ok: %s; rel_l2 %.3g <= %.3g", check.what_was_checked.c_str(), check.rel_l2,
                  check.tolerance);
  } else {
    std::snprintf(message, sizeof(message),
                  "wrong result: rel_l2 %.3g (tolerance %.3g), %lld unwritten elements, %s; %s", check.rel_l2,
                  check.tolerance, check.unwritten, check.all_finite ? "all finite" : "NON-FINITE values",
                  check.what_was_checked.c_str());
  }
  plugin::copy_text(out.message, message);

  storage.add_metric("unwritten_elements", double(check.unwritten), "elements");
  storage.add_metric("cache_tiled_from_pool", host.tiled ? 1 : 0, "bool");
  storage.add_metric("read_bandwidth_bytes", double(bandwidth.bytes), "B");
  storage.add_metric("read_bandwidth_median_us", bandwidth.median_us, "us");
  storage.add_metric("tiles_per_cta", geometry.tiles, "tiles");
  storage.add_metric("waves", geometry.waves, "waves");
  storage.add_metric("blocks_per_sm", meta.blocks_per_sm, "blocks");
  storage.add_metric("local_bytes_per_thread", meta.local_bytes_per_thread, "B");
  if (std::isfinite(latencies.full_partner_us)) {
    storage.add_metric("latency_partner_context_us", latencies.full_partner_us, "us");
    storage.add_metric("tiles_per_cta_partner_context", geometry.tiles_partner, "tiles");
  }
  if (cold) storage.add_metric("l2_flush_bytes", double(flusher_.bytes()), "B");
  if (std::isfinite(stream_same_bytes_us)) {
    storage.add_metric("stream_same_bytes_us", stream_same_bytes_us, "us");
    storage.add_metric("stream_same_bytes_fraction", stream_same_bytes_us / main.median_us, "");
  }

  // SASS opcode counts of the main kernel (cuobjdump of this plugin, once per kernel).
  const SassLookup& sass = sass_of(meta.mangled_name);
  nlohmann::json sass_json = {{"note", sass.error}};
  if (sass.error.empty()) {
    for (const char* opcode : kReportedSassOpcodes)
      storage.add_metric(std::string("sass_") + opcode, sass.counts.count(opcode), "inst");
    storage.add_metric("sass_instructions", sass.counts.instructions, "inst");
    sass_json = {{"source", sass.source}, {"instructions", sass.counts.instructions}, {"opcodes", sass.counts.opcodes}};
  }
  nlohmann::json kernel = {{"name", meta.name},
                           {"mangled_name", meta.mangled_name},
                           {"cubin_sha256", meta.cubin_sha256},
                           {"cubin_bytes", meta.cubin_bytes},
                           {"cubin_note", meta.cubin_note},
                           {"regs_per_thread", meta.regs_per_thread},
                           {"smem_static_bytes", meta.smem_static_bytes},
                           {"smem_dynamic_bytes", meta.smem_dynamic_bytes},
                           {"local_bytes_per_thread", meta.local_bytes_per_thread},
                           {"blocks_per_sm", meta.blocks_per_sm},
                           {"occupancy_theoretical", meta.occupancy_theoretical},
                           {"waves", meta.waves},
                           {"grid", {meta.grid.x, meta.grid.y, meta.grid.z}},
                           {"block", {meta.block.x, meta.block.y, meta.block.z}},
                           {"cluster", {meta.cluster.x, meta.cluster.y, meta.cluster.z}},
                           {"splits", args.splits},
                           {"tile_tokens", meta.tile_tokens}};
  const nlohmann::json samples = {
      {"seed", std::to_string(seed)},
      {"cache", std::string(to_string(op.cache))},
      {"warmup", warmup},
      {"repeats", repeats},
      {"l2_flush", cold ? "read of " + std::to_string(flusher_.bytes()) + " bytes before each launch"
                        : "none (repeated launches on the same buffers)"},
      {"read_bandwidth",
       {{"gbps", bandwidth.gbps},
        {"bytes", bandwidth.bytes},
        {"median_us", bandwidth.median_us},
        {"min_us", bandwidth.min_us},
        {"max_us", bandwidth.max_us}}},
      {"geometry",
       {{"tiles_per_cta", geometry.tiles},
        {"tiles_per_cta_partner_context", geometry.tiles_partner},
        {"waves", geometry.waves}}},
      {"correctness", check.what_was_checked},
      {"timings", timings}};
  kernel["sass"] = sass_json;
  storage.add_artifact("kernel.json", "application/json", kernel.dump(2));
  storage.add_artifact("samples.json", "application/json", samples.dump());
}

}  // namespace tilepath::cuda
