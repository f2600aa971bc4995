#include "backends/hip/device_session.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "backends/abi/tilepath_plugin_gate.h"
#include "backends/hip/case_inputs.h"
#include "backends/hip/decode_launch.h"
#include "backends/hip/hip_check.h"
#include "backends/hip/kernel_records.h"
#include "backends/hip/read_bandwidth.h"
#include "core/numerics/case_gate.h"
#include "core/numerics/fnuz_decode_emulation.h"
#include "core/numerics/fp8.h"

namespace tilepath::hip {
namespace {

// Stages with a remove/twice ablation (the loads are measured by load_only's slope).
constexpr int kAblatedStages[] = {TP_STAGE_K_PREP, TP_STAGE_QK, TP_STAGE_SOFTMAX, TP_STAGE_V_PREP, TP_STAGE_PV};
// Float64 work (tokens x q heads x head dim) above which only a sample of requests is checked.
constexpr double kFullCheckMaxWork = 1.5e8;
// Bytes written between cold launches: beyond MI300X's 4 MB L2 and 256 MB Infinity Cache.
constexpr std::size_t kFlushBytes = std::size_t(512) << 20;

struct DeviceInputs {
  DeviceBuffer q, k, v, page_table, lengths, short_lengths, k_scale, v_scale, out, workspace;
};

// A device buffer of whole pages filled by repeating `bytes` of host pages (the pool of a
// tiled case, or the whole cache): the first copy from the host, the rest on the device.
void upload_pages(const DeviceBuffer& dst, const void* host, std::size_t bytes) {
  if (bytes == 0 || dst.bytes() == 0) return;
  const std::size_t first = std::min(bytes, dst.bytes());
  TP_HIP_CHECK(hipMemcpy(dst.get(), host, first, hipMemcpyHostToDevice));
  for (std::size_t at = first; at < dst.bytes(); at += first) {
    const std::size_t n = std::min(first, dst.bytes() - at);
    TP_HIP_CHECK(hipMemcpy(dst.get<char>() + at, dst.get(), n, hipMemcpyDeviceToDevice));
  }
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? NAN : v[v.size() / 2];
}

}  // namespace

std::string unsupported_reason(const OperatingPoint& op) {
  try {
    op.validate();
  } catch (const ValidationError& e) {
    return e.what();
  }
  if (op.mma != Mma::mma_sync)
    return "mma: the HIP kernels issue MFMA, synchronous MMAs on register operands (what mma_sync names on AMD); "
           "CDNA 3 has no " +
           std::string(to_string(op.mma)) + "; allowed: mma_sync";
  if (op.rope != RopeLayout::post_rope) return "rope: the HIP kernels apply no RoPE to cached K; allowed: post_rope";
  if (op.k_repr != KRepr::plain)
    return "k_repr: the HIP kernels take plain (CDNA 3 has no block-scaled MFMA, and prebias needs a k_bias stage); "
           "allowed: plain";
  if (op.mode == TransformMode::separate_kv)
    return "mode: the HIP kernels have no separate_kv (no converter waves); allowed for " +
           std::string(to_string(op.kv)) + "/" + std::string(to_string(op.k_path)) +
           ": full, k_only where the dtype has FP8 V, none where it has none";
  DecodeArgs args;
  args.kv_dtype = static_cast<int>(op.kv);
  args.k_path = static_cast<int>(op.k_path);
  args.mode = static_cast<int>(op.mode);
  args.head_dim = op.head_dim;
  if (find_variant(args, Ablation{}) == nullptr)
    return "no HIP kernel compiled for kv=" + std::string(to_string(op.kv)) +
           " k_path=" + std::string(to_string(op.k_path)) + " mode=" + std::string(to_string(op.mode)) +
           " head_dim=" + std::to_string(op.head_dim) + "; head_dim allowed: 64, 128, 256";
  return {};
}

DeviceSession::DeviceSession(int device) : device_(device) {
  TP_HIP_CHECK(hipSetDevice(device_));
  hipDeviceProp_t prop{};
  TP_HIP_CHECK(hipGetDeviceProperties(&prop, device_));
  cu_count_ = prop.multiProcessorCount;
  arch_ = prop.gcnArchName;
  TP_HIP_CHECK(hipStreamCreateWithFlags(&stream_, hipStreamNonBlocking));
}

DeviceSession::~DeviceSession() {
  if (stream_) (void)hipStreamDestroy(stream_);
}

void DeviceSession::run(const OperatingPoint& op, const tp_run_options& options, tp_result& out,
                        plugin::ResultStorage& storage) {
  const plugin::PhaseReporter report(options);
  if (std::string why = unsupported_reason(op); !why.empty()) throw plugin::UnsupportedCase(why);
  if (arch_.rfind("gfx942", 0) != 0)
    throw plugin::UnsupportedCase("device " + std::to_string(device_) + " is " + arch_ +
                                  "; the HIP kernels are built for gfx942 (MI300) only");
  TP_HIP_CHECK(hipSetDevice(device_));
  const std::uint64_t seed =
      options.seed ? options.seed : (std::uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  const int warmup = options.warmup > 0 ? options.warmup : 5;
  const int repeats = options.repeats > 0 ? options.repeats : 20;
  const bool cold = op.cache == CacheState::hbm_cold;

  // ---- inputs: the store's OCP cache, re-encoded to FNUZ (exact; scales doubled) ----
  report(0.0, "generate inputs");
  std::string why_keys;
  const auto keys = plugin::key_distribution(&options, &why_keys);
  if (!keys) throw std::invalid_argument(why_keys);
  const CaseInputs inputs = make_case_inputs(op, seed, *keys);
  const numerics::DecodeProblem fnuz = numerics::to_fnuz_cache(inputs.source);
  const int max_len = *std::max_element(inputs.lengths.begin(), inputs.lengths.end());
  const int head_chunks = (op.gqa_ratio() + kHeadsPerWorkgroup - 1) / kHeadsPerWorkgroup;
  const int splits = op.splits > 0 ? op.splits : choose_splits(op.batch, op.kv_heads, head_chunks, max_len, cu_count_);

  report(0.1, "upload inputs");
  DeviceInputs in;
  const bool k8 = !fnuz.k8.empty(), v8 = !fnuz.v8.empty();
  const std::size_t page_elems = fnuz.k_page_elems();
  in.k = DeviceBuffer(std::size_t(inputs.num_pages) * page_elems * (k8 ? 1 : 2));
  in.v = DeviceBuffer(std::size_t(inputs.num_pages) * page_elems * (v8 ? 1 : 2));
  upload_pages(in.k, k8 ? static_cast<const void*>(fnuz.k8.data()) : fnuz.k16.data(),
               std::size_t(fnuz.num_pages) * page_elems * (k8 ? 1 : 2));
  upload_pages(in.v, v8 ? static_cast<const void*>(fnuz.v8.data()) : fnuz.v16.data(),
               std::size_t(fnuz.num_pages) * page_elems * (v8 ? 1 : 2));
  in.q = DeviceBuffer::upload(inputs.q);
  in.page_table = DeviceBuffer::upload(inputs.page_table);
  in.lengths = DeviceBuffer::upload(inputs.lengths);
  std::vector<std::int32_t> short_lengths(inputs.lengths.size());
  std::transform(inputs.lengths.begin(), inputs.lengths.end(), short_lengths.begin(),
                 [](std::int32_t len) { return std::max(1, (len + 1) / 2); });
  in.short_lengths = DeviceBuffer::upload(short_lengths);
  in.k_scale = DeviceBuffer::upload(fnuz.k_scale);
  in.v_scale = DeviceBuffer::upload(fnuz.v_scale);
  in.out = DeviceBuffer(inputs.q.size() * sizeof(std::uint16_t));

  DecodeArgs args;
  args.batch = op.batch, args.q_heads = op.q_heads, args.kv_heads = op.kv_heads, args.head_dim = op.head_dim;
  args.page_size = op.page_size, args.max_pages_per_seq = inputs.max_pages_per_seq;
  args.kv_dtype = static_cast<int>(op.kv), args.k_path = static_cast<int>(op.k_path);
  args.mode = static_cast<int>(op.mode);
  args.splits = splits, args.split_tokens = split_tokens_for(max_len, splits);
  args.scale_per_head = fnuz.k_scale.size() > 1 ? 1 : 0;
  args.softmax_scale = fnuz.softmax_scale;
  args.q = in.q.get<std::uint16_t>(), args.k_pages = in.k.get(), args.v_pages = in.v.get();
  args.page_table = in.page_table.get<std::int32_t>(), args.lengths = in.lengths.get<std::int32_t>();
  args.k_scale = in.k_scale.get<float>(), args.v_scale = in.v_scale.get<float>();
  args.out = in.out.get<std::uint16_t>();
  in.workspace = DeviceBuffer(decode_workspace_bytes(args));
  if (splits > 1) {
    args.partial_out = in.workspace.get<float>();
    args.partial_lse = args.partial_out + std::size_t(splits) * op.batch * op.q_heads * op.head_dim;
  }

  // ---- correctness: poison, one launch, vs the float64 reference with FNUZ Q ----
  report(0.2, "correctness");
  TP_HIP_CHECK(hipMemsetAsync(in.out.get(), 0xFF, in.out.bytes(), stream_));
  KernelInfo info;
  TP_HIP_CHECK(launch_decode(args, Ablation{}, stream_, &info));
  TP_HIP_CHECK(hipStreamSynchronize(stream_));
  std::vector<std::uint16_t> output(inputs.q.size());
  TP_HIP_CHECK(hipMemcpy(output.data(), in.out.get(), in.out.bytes(), hipMemcpyDeviceToHost));

  // Every request of a small case; the first, last and longest of a large one. Each checked
  // request is a one-request problem (request_problem): the kernel check's reference and
  // the gate's full-precision counterpart over the same pages.
  std::vector<int> requests(op.batch);
  std::iota(requests.begin(), requests.end(), 0);
  if (inputs.tiled || double(op.total_tokens()) * op.q_heads * op.head_dim > kFullCheckMaxWork) {
    const int longest = int(std::max_element(inputs.lengths.begin(), inputs.lengths.end()) - inputs.lengths.begin());
    requests = {0};
    for (int b : {op.batch - 1, longest})
      if (std::find(requests.begin(), requests.end(), b) == requests.end()) requests.push_back(b);
  }
  const numerics::DecodeProblem full = full_precision_source(inputs);
  const std::size_t row = std::size_t(op.q_heads) * op.head_dim;
  std::vector<float> checked;
  std::vector<double> reference;
  numerics::GateMetrics gate;
  for (int b : requests) {
    const numerics::DecodeProblem stored = request_problem(inputs, inputs.source, b);
    std::vector<float> out_b(row);
    for (std::size_t e = 0; e < row; ++e) out_b[e] = numerics::bf16_to_float(output[std::size_t(b) * row + e]);
    const std::vector<double> ref_b = numerics::reference_decode(stored, {0}, numerics::QQuantization::e4m3_fnuz);
    numerics::GateMetrics gate_b = numerics::case_gate(stored, {0}, out_b, request_problem(inputs, full, b));
    for (numerics::GateRowMetrics& r : gate_b.rows) r.request = b;
    gate.rows.insert(gate.rows.end(), gate_b.rows.begin(), gate_b.rows.end());
    checked.insert(checked.end(), out_b.begin(), out_b.end());
    reference.insert(reference.end(), ref_b.begin(), ref_b.end());
  }
  gate.summarise();
  gate.rows_total = op.batch * op.kv_heads;
  const numerics::ErrorStats stats = numerics::compare(checked, reference);
  const long long unwritten = std::count(output.begin(), output.end(), std::uint16_t(0xFFFF));
  const bool finite = std::none_of(output.begin(), output.end(),
                                   [](std::uint16_t bits) { return (bits & 0x7F80) == 0x7F80; });  // BF16 Inf/NaN
  out.rel_l2_error = stats.rel_l2;
  out.max_abs_error = stats.max_abs;
  out.tolerance = numerics::default_tolerance(op);
  out.passed = unwritten == 0 && finite && stats.all_finite && stats.rel_l2 <= out.tolerance ? 1 : 0;
  plugin::set_gate(&out, gate);
  plugin::set_check_rows(&out, int(requests.size()) * op.kv_heads, op.batch * op.kv_heads);
  plugin::set_key_distribution(&out, *keys);

  // ---- timing ---------------------------------------------------------------
  if (cold && flush_.bytes() == 0) flush_ = DeviceBuffer(kFlushBytes);
  hipEvent_t start = nullptr, stop = nullptr;
  TP_HIP_CHECK(hipEventCreate(&start));
  TP_HIP_CHECK(hipEventCreate(&stop));
  const auto time_variant = [&](const Ablation& ablation, const std::int32_t* lengths, int count) {
    DecodeArgs a = args;
    a.lengths = lengths;
    std::vector<double> samples;
    for (int i = 0; i < warmup + count; ++i) {
      if (cold) TP_HIP_CHECK(hipMemsetAsync(flush_.get(), i & 0xFF, flush_.bytes(), stream_));
      TP_HIP_CHECK(hipEventRecord(start, stream_));
      TP_HIP_CHECK(launch_decode(a, ablation, stream_, nullptr));
      TP_HIP_CHECK(hipEventRecord(stop, stream_));
      TP_HIP_CHECK(hipEventSynchronize(stop));
      float ms = 0;
      TP_HIP_CHECK(hipEventElapsedTime(&ms, start, stop));
      if (i >= warmup) samples.push_back(ms * 1e3);
    }
    return samples;
  };
  report(0.3, "time full kernel");
  const std::vector<double> samples = time_variant(Ablation{}, args.lengths, repeats);
  out.latency_us = median_of(samples);
  out.latency_min_us = *std::min_element(samples.begin(), samples.end());
  out.latency_max_us = *std::max_element(samples.begin(), samples.end());
  out.repeats = repeats;

  // ---- stage costs and tile interval (per tile of one workgroup) ----------------
  const int tile_tokens = info.variant->tile_tokens;
  const int per_split = std::min(max_len, args.split_tokens);
  const int tiles = (per_split + tile_tokens - 1) / tile_tokens;
  const int short_max = (max_len + 1) / 2;
  const int tiles_short = (std::min(short_max, args.split_tokens) + tile_tokens - 1) / tile_tokens;
  const bool want_costs = (options.ablations & TP_ABLATE_STAGE_COSTS) != 0 && out.passed;
  const bool want_interval = want_costs || (options.ablations & TP_ABLATE_TILE_INTERVAL) != 0;
  const int ablation_repeats = std::max(10, repeats / 2);
  if (want_interval && tiles > tiles_short) {
    report(0.5, "tile interval");
    const double short_us = median_of(time_variant(Ablation{}, in.short_lengths.get<std::int32_t>(), ablation_repeats));
    out.tile_interval_us = (out.latency_us - short_us) / (tiles - tiles_short);
  }
  if (want_costs) {
    report(0.6, "stage ablations");
    const double per_tile = std::max(1, tiles);
    for (int stage : kAblatedStages) {
      for (AblationKind kind : {AblationKind::remove, AblationKind::twice}) {
        const Ablation ablation{kind, stage};
        if (find_variant(args, ablation) == nullptr) continue;
        const double us = median_of(time_variant(ablation, args.lengths, ablation_repeats));
        if (kind == AblationKind::remove) {
          storage.add_stage_cost(stage, TP_COST_REMOVED, (out.latency_us - us) / per_tile);
        } else {
          storage.add_stage_cost(stage, TP_COST_DOUBLED, (us - out.latency_us) / per_tile);
        }
      }
    }
    const Ablation load_only{AblationKind::load_only, -1};
    if (find_variant(args, load_only) != nullptr && tiles > tiles_short) {
      const double long_us = median_of(time_variant(load_only, args.lengths, ablation_repeats));
      const double short_us =
          median_of(time_variant(load_only, in.short_lengths.get<std::int32_t>(), ablation_repeats));
      const double load_per_tile = (long_us - short_us) / (tiles - tiles_short);
      const double k_share = (k8 ? 1.0 : 2.0) / ((k8 ? 1.0 : 2.0) + (v8 ? 1.0 : 2.0));
      storage.add_stage_cost(TP_STAGE_K_LOAD, TP_COST_ISOLATED, load_per_tile * k_share);
      storage.add_stage_cost(TP_STAGE_V_LOAD, TP_COST_ISOLATED, load_per_tile * (1.0 - k_share));
    }
  }
  // ---- the ceiling: a streaming read over 2 GiB (8x the Infinity Cache), once per session ----
  if (read_bandwidth_gbps_ <= 0) {
    report(0.9, "read bandwidth");
    constexpr std::size_t kReadBytes = std::size_t(2) << 30;
    DeviceBuffer buffer(kReadBytes), sink(sizeof(unsigned));
    TP_HIP_CHECK(hipMemsetAsync(buffer.get(), 1, kReadBytes, stream_));
    std::vector<double> us;
    for (int i = 0; i < 12; ++i) {
      TP_HIP_CHECK(hipEventRecord(start, stream_));
      TP_HIP_CHECK(launch_read_stream(buffer.get(), kReadBytes, sink.get<unsigned>(), cu_count_, stream_));
      TP_HIP_CHECK(hipEventRecord(stop, stream_));
      TP_HIP_CHECK(hipEventSynchronize(stop));
      float ms = 0;
      TP_HIP_CHECK(hipEventElapsedTime(&ms, start, stop));
      if (i >= 2) us.push_back(ms * 1e3);
    }
    read_bandwidth_gbps_ = double(kReadBytes) / (median_of(us) * 1e3);  // bytes/us -> GB/s
  }
  out.read_bandwidth_gbps = read_bandwidth_gbps_;
  out.floor_fraction = (op.bytes_moved() / (read_bandwidth_gbps_ * 1e3)) / out.latency_us;
  (void)hipEventDestroy(start);
  (void)hipEventDestroy(stop);

  // ---- metadata: the kernel record of the variant that ran --------------------
  out.tile_tokens = tile_tokens;
  out.bytes_moved = op.bytes_moved();
  out.splits = splits;
  for (int i = 0; i < 3; ++i) out.grid[i] = info.grid[i], out.block[i] = info.block[i];
  plugin::copy_text(out.kernel_name, info.variant->name);
  if (const KernelRecord* r = find_kernel_record(info.variant->name)) {
    plugin::copy_text(out.cubin_sha256, r->code_object_sha256);
    out.regs_per_thread = r->vgprs + r->agprs;  // the unified file: what occupancy depends on
    out.smem_static_bytes = r->lds_bytes;
    out.smem_dynamic_bytes = 0;
    if (r->waves_per_simd > 0) out.occupancy_theoretical = r->waves_per_simd / 8.0;  // of gfx942's 8 per SIMD
    storage.add_metric("arch_vgprs", r->vgprs, "registers");
    storage.add_metric("agprs", r->agprs, "registers");
    storage.add_metric("sgprs", r->sgprs, "registers");
    storage.add_metric("scratch_bytes", r->scratch_bytes, "bytes");
    storage.add_metric("waves_per_simd", r->waves_per_simd, "waves");
  }
  storage.add_metric("split_tokens", args.split_tokens, "tokens");
  report(1.0, "done");
  plugin::finish(&out, out.passed ? TP_OK : TP_ERR_WRONG_RESULT,
                 std::string(out.passed ? "ok" : "output failed the kernel check") + ": " + info.variant->name +
                     ", rel_l2 " + std::to_string(stats.rel_l2) + " on " + std::to_string(requests.size()) +
                     " requests vs float64 with FNUZ Q" + (inputs.tiled ? " (cache tiled from a pool)" : "") +
                     (unwritten ? ", unwritten elements" : ""));
}

}  // namespace tilepath::hip
