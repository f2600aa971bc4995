#include "core/perf/cuda_latency_model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/perf/cuda_kernel_plan.h"
#include "core/perf/model_file.h"

namespace tilepath::perf {
namespace {

namespace plan = cuda_plan;

constexpr int kMmaRows = 16;  // QK pads the <= 8 query heads of a CTA to m16
constexpr double kSoftmaxFp32OpsPerScore = 5;

long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

// The mma.sync kernels (decode_traits.cuh): MMA warps of 32-token tiles per kv head over a
// ring of raw K/V stages (separate_kv: converter warps and staged 16-bit slots too).
void plan_mma_sync_cta(const OperatingPoint& op, int kv_heads_per_cta, int regs, CudaKernelPlan& p) {
  const bool separate = op.mode == TransformMode::separate_kv;
  const int d = op.head_dim;
  const int k_bytes = k_is_fp8(op.kv) ? 1 : 2, v_bytes = v_is_fp8(op.kv) ? 1 : 2;
  // MXFP8: one UE8M0 scale byte per 32 elements along D of each FP8 tensor, in the same slot
  const int fp8_tensors = (k_is_fp8(op.kv) ? 1 : 0) + (v_is_fp8(op.kv) ? 1 : 0);
  const int raw_stage = plan::kWarpTokens * d * (k_bytes + v_bytes) +
                        (op.k_repr == KRepr::mxfp8 ? plan::kWarpTokens * (d / 32) * fp8_tensors : 0);
  // separate_kv stages what the MMA warps read: F16 K (FP8 K stays FP8 on fp8_qk) and F16 V
  const int staged_k = op.k_path == KPath::fp8_qk ? 1 : 2;
  const int staged_per_warp = separate ? 2 * plan::kWarpTokens * d * (staged_k + 2) : 0;
  const plan::RingShape shape = plan::choose_ring_shape(raw_stage, staged_per_warp, separate);
  p.mma_warps_per_head = shape.mma_warps;
  p.stages = shape.stages;
  p.kv_heads_per_cta = kv_heads_per_cta;
  const int mma_warps = p.mma_warps_per_head * kv_heads_per_cta;
  p.converter_warps = separate ? mma_warps : 0;
  p.threads = 32 * (mma_warps + p.converter_warps);
  p.smem_bytes = mma_warps * (p.stages * raw_stage + staged_per_warp) + (separate ? mma_warps * 2 * 2 * 8 : 0);
  if (restores_bias_in_scores(op)) p.smem_bytes += plan::kWarpTokens * d * 2;  // the k_bias cos/sin table
  p.tile_tokens = plan::kWarpTokens * p.mma_warps_per_head;
  p.ctas_per_sm = plan::ctas_per_sm_for(p.smem_bytes, p.threads, regs);
}

// The wgmma kernels (decode_wgmma.cuh): a consumer warpgroup per kv head (one or two) and
// their producer warps, 64-token tiles.
void plan_wgmma_cta(const OperatingPoint& op, int kv_heads_per_cta, int regs, CudaKernelPlan& p) {
  const int k_bytes = k_is_fp8(op.kv) ? 1 : 2, v_bytes = v_is_fp8(op.kv) ? 1 : 2;
  p.mma_warps_per_head = plan::kWgmmaConsumerWarps;
  p.stages = plan::wgmma_stages(kv_heads_per_cta * plan::wgmma_stage_bytes(op.head_dim, k_bytes, v_bytes));
  p.kv_heads_per_cta = kv_heads_per_cta;
  p.converter_warps = 0;
  p.threads = plan::wgmma_threads(
      kv_heads_per_cta, plan::wgmma_producer_warps(!plan::wgmma_tma_tiles_pages(op.page_size), kv_heads_per_cta));
  p.smem_bytes = plan::wgmma_smem_bytes(op.head_dim, k_bytes, v_bytes, op.k_path == KPath::fp8_qk, kv_heads_per_cta);
  p.tile_tokens = plan::kWgmmaTileTokens;
  p.ctas_per_sm = plan::ctas_per_sm_for(p.smem_bytes, p.threads, regs);
}

void plan_cta(const OperatingPoint& op, int kv_heads_per_cta, int regs, CudaKernelPlan& p) {
  if (op.mma == Mma::wgmma)
    plan_wgmma_cta(op, kv_heads_per_cta, regs, p);
  else
    plan_mma_sync_cta(op, kv_heads_per_cta, regs, p);
}

}  // namespace

CudaKernelPlan plan_cuda_kernel(const OperatingPoint& op, int sm_count, int regs_per_thread) {
  CudaKernelPlan p;
  p.head_chunks = static_cast<int>(ceil_div(op.gqa_ratio(), plan::kHeadsPerCta));
  // A wgmma CTA's kv heads depend on the shape alone, and its split count fills its own CTAs.
  // The mma.sync split count fills the one-kv-head kernel's resident slots; one holding two kv
  // heads per CTA (chosen once a split is long) keeps the same kv-head streams per SM. Both as
  // the plugin's choose_splits.
  const bool wgmma = op.mma == Mma::wgmma;
  const int wgmma_heads =
      wgmma ? plan::wgmma_kv_heads_per_cta_for(op.kv == KvDtype::k8v8, op.head_dim, op.kv_heads) : 1;
  plan_cta(op, wgmma_heads, regs_per_thread, p);
  const int max_len = op.max_context();
  const long long streams = static_cast<long long>(op.batch) * (op.kv_heads / wgmma_heads) * p.head_chunks;
  const auto family = wgmma ? plan::MmaFamily::wgmma : plan::MmaFamily::mma_sync;
  p.splits = op.splits > 0 ? op.splits : plan::choose_splits(streams, max_len, sm_count, p.ctas_per_sm, family);
  p.split_tokens = plan::split_tokens_for(max_len, p.splits);
  if (!wgmma) {
    const int kv_heads_per_cta = plan::kv_heads_per_cta_for(
        op.kv == KvDtype::k8v8, op.mode == TransformMode::separate_kv, op.head_dim, op.kv_heads, p.split_tokens);
    if (kv_heads_per_cta != 1) plan_cta(op, kv_heads_per_cta, regs_per_thread, p);
  }
  p.tiles_per_cta = ceil_div(std::min(max_len, p.split_tokens), p.tile_tokens);
  p.ctas = static_cast<long long>(p.splits) * (op.kv_heads / p.kv_heads_per_cta) * p.head_chunks * op.batch;
  const long long slots = static_cast<long long>(sm_count) * std::max(1, p.ctas_per_sm);
  p.resident_ctas = std::min(p.ctas, slots);
  p.waves = ceil_div(p.ctas, slots);
  return p;
}

const std::vector<std::string>& cuda_kernel_fit_names() {
  static const std::vector<std::string> names = {"launch_us",         "wave_fill_us",       "bandwidth_efficiency",
                                                 "loaded_latency_ns", "compute_efficiency", "converter_efficiency",
                                                 "combine_us"};
  return names;
}

std::vector<double> fit_values(const CudaKernelFit& f) {
  return {f.launch_us,         f.wave_fill_us,       f.bandwidth_efficiency,
          f.loaded_latency_ns, f.compute_efficiency, f.converter_efficiency,
          f.combine_us};
}

void set_fit_values(CudaKernelFit& f, const std::vector<double>& v) {
  if (v.size() != cuda_kernel_fit_names().size()) throw std::invalid_argument("set_fit_values: wrong count");
  f.launch_us = v[0], f.wave_fill_us = v[1], f.bandwidth_efficiency = v[2], f.loaded_latency_ns = v[3];
  f.compute_efficiency = v[4], f.converter_efficiency = v[5], f.combine_us = v[6];
}

CudaKernelFit parse_cuda_kernel_fit(const nlohmann::json& j, const std::string& file) {
  CudaKernelFit f;
  f.file = file;
  if (!j.is_object()) fail_field(file, "(top level)", "must be an object");
  f.fitted_on = read_string_field(j, "fitted_on", file);
  if (!j.contains("coefficients") || !j["coefficients"].is_object())
    fail_field(file, "coefficients", "missing (an object of {value, source})");
  std::vector<double> values;
  for (const std::string& name : cuda_kernel_fit_names()) {
    const std::string field = "coefficients." + name;
    if (!j["coefficients"].contains(name)) fail_field(file, field, "missing");
    const nlohmann::json& q = j["coefficients"][name];
    if (!q.is_object() || !q.contains("value") || !q["value"].is_number())
      fail_field(file, field + ".value", "missing or not a number");
    const double value = q["value"].get<double>();
    if (!std::isfinite(value) || value < 0) fail_field(file, field + ".value", "must be a finite number >= 0");
    if (!q.contains("source") || !q["source"].is_string() || q["source"].get<std::string>().empty())
      fail_field(file, field + ".source", "missing (how the number was obtained)");
    values.push_back(value);
    f.sources[name] = q["source"].get<std::string>();
  }
  set_fit_values(f, values);
  if (f.bandwidth_efficiency <= 0 || f.bandwidth_efficiency > 1)
    fail_field(file, "coefficients.bandwidth_efficiency.value", "must be in (0, 1]");
  return f;
}

CudaKernelFit load_cuda_kernel_fit(const std::string& gpu_id, const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path own = fs::path(dir) / "fits" / (gpu_id + ".json");
  const fs::path h200 = fs::path(dir) / "fits" / "h200.json";
  std::error_code ec;
  const fs::path path = fs::exists(own, ec) ? own : h200;
  return parse_cuda_kernel_fit(read_model_json(path.string(), "kernel fit"), path.string());
}

CudaLatencyEstimate estimate_cuda_latency(const OperatingPoint& op, const GpuModel& gpu, const CudaKernelFit& fit) {
  CudaLatencyEstimate e;
  e.plan = plan_cuda_kernel(op, gpu.sm_count);
  const CudaKernelPlan& p = e.plan;
  const int d = op.head_dim;
  // MXFP8 (a block-scaled MMA such as Blackwell's tcgen05.mma kind::mxf8f6f4): each FP8
  // element carries 1/32 of a UE8M0 scale byte, and the MMA applies the scales itself.
  const bool mx = op.k_repr == KRepr::mxfp8;
  const double fp8_bytes = mx ? 1.0 + 1.0 / 32 : 1.0;
  const double k_bytes = k_is_fp8(op.kv) ? fp8_bytes : 2, v_bytes = v_is_fp8(op.kv) ? fp8_bytes : 2;
  const double kv_bytes = static_cast<double>(op.total_tokens()) * op.kv_heads * d * (k_bytes + v_bytes);
  e.served_from_l2 = kv_served_from_l2(op.cache == CacheState::l2_warm, kv_bytes, gpu);

  // Memory: one CTA step (tile_tokens of each of its kv heads) at the resident CTAs' share.
  const double step_tokens = static_cast<double>(p.tile_tokens) * p.kv_heads_per_cta;
  const double step_bytes = step_tokens * d * (k_bytes + v_bytes);
  const double bandwidth = (e.served_from_l2 ? gpu.l2_read_bandwidth_gbps : gpu.read_bandwidth_gbps) *
                           fit.bandwidth_efficiency * 1e3;  // bytes per us
  e.memory_us = step_bytes * static_cast<double>(p.resident_ctas) / bandwidth;
  // A warp keeps stages-1 tiles in flight: a step takes at least the latency over that.
  e.latency_bound_us =
      fit.loaded_latency_ns * (e.served_from_l2 ? kL2LatencyFraction : 1.0) / std::max(1, p.stages - 1) * 1e-3;

  // Compute of one step at the SM's datasheet rates, shared by the CTAs resident on it.
  const double per_sm = 1.0 / gpu.sm_count;
  const auto rate = [&](const std::string& path) { return gpu.path(path)->dense_tflops * 1e6 * per_sm; };  // flop/us
  const bool fp8_qk = op.k_path == KPath::fp8_qk, fp8_pv = v_is_fp8(op.kv) && op.mode == TransformMode::k_only;
  const double cvt = gpu.cvt_fp8_operand_per_sm_per_clk * gpu.clock_mhz;  // elements per us
  const double exp = gpu.sfu_exp_per_sm_per_clk * gpu.clock_mhz;
  const double fp32 = gpu.fp32_tflops * 1e6 / 2 * per_sm;
  double converted = 0;
  if (k_is_fp8(op.kv) && op.k_path == KPath::transform) converted += step_tokens * d;
  if (v_is_fp8(op.kv) && op.mode != TransformMode::k_only) converted += step_tokens * d;
  const double mma_flop = 2.0 * kMmaRows * step_tokens * d;  // the m16 tile of a CTA's <= 8 query heads
  // The FP8 MMAs (fp8_qk's QK, k_only's PV): mma_sync e4m3 is lowered to F16 HMMA (plus
  // F2FP conversions of its operands) on sm_90a, so it runs at the 16-bit dense rate; wgmma
  // issues QGMMA at the FP8 dense rate (the fit's coefficients come from mma.sync kernels).
  const char* fp8_path = mx ? "mxf8_mxf8" : op.mma == Mma::wgmma ? "e4m3_e4m3" : "bf16_bf16";
  const double qk = mma_flop / rate(fp8_qk ? fp8_path : "bf16_bf16");
  const double pv = mma_flop / rate(fp8_pv ? fp8_path : "bf16_bf16");
  const double scores = kMmaRows * step_tokens;
  double softmax = scores / exp + scores * kSoftmaxFp32OpsPerScore / fp32 + (fp8_pv ? scores / cvt : 0.0);
  // k_bias: per row, four FMAs per channel pair (the turn to the warp's next tile), then a
  // 16-bit MMA of QK's shape against the cos/sin table
  const double pairs = kMmaRows * d / 2.0 * p.kv_heads_per_cta;
  const double k_bias = restores_bias_in_scores(op) ? pairs * 4 / fp32 + mma_flop / rate("bf16_bf16") : 0.0;
  // pre-RoPE prebias: the exact bias added back to every converted K element; MXFP8
  // converted in the tile: each element times its block's scale
  const bool k_converted = k_is_fp8(op.kv) && op.k_path == KPath::transform;
  const bool v_converted = v_is_fp8(op.kv) && op.mode != TransformMode::k_only;
  const double k_prep_extra = (op.k_repr == KRepr::prebias && op.rope == RopeLayout::pre_rope) || (mx && k_converted)
                                  ? step_tokens * d / fp32
                                  : 0.0;
  const double v_prep_extra = mx && v_converted ? step_tokens * d / fp32 : 0.0;
  const double share = std::max(1, p.ctas_per_sm);
  const double on_mma = share * fit.compute_efficiency, on_converter = share * fit.converter_efficiency;
  StageCosts& c = e.stage_us;
  const double k_share = k_bytes / (k_bytes + v_bytes);
  if (k_is_fp8(op.kv) && op.k_path == KPath::transform)
    c[Stage::k_prep] = (step_tokens * d / cvt + k_prep_extra) * (p.converter_warps ? on_converter : on_mma);
  if (v_is_fp8(op.kv) && op.mode != TransformMode::k_only)
    c[Stage::v_prep] = (step_tokens * d / cvt + v_prep_extra) * (p.converter_warps ? on_converter : on_mma);
  c[Stage::qk] = qk * on_mma;
  if (k_bias > 0) c[Stage::k_bias] = k_bias * on_mma;
  c[Stage::softmax] = softmax * on_mma;
  c[Stage::pv] = pv * on_mma;
  c[Stage::accum] = kMmaRows * d * p.kv_heads_per_cta / fp32 * on_mma;  // O *= alpha
  const double mma_warps =
      (qk + pv + softmax + k_bias + (p.converter_warps ? 0.0 : converted / cvt + k_prep_extra + v_prep_extra)) * share;
  e.compute_us = mma_warps * fit.compute_efficiency;
  std::string compute_limit = "compute";
  if (p.converter_warps) {
    const double converters = (converted / cvt + k_prep_extra + v_prep_extra) * on_converter;
    if (converters > e.compute_us) e.compute_us = converters, compute_limit = "converter";
  }

  e.ii_us = std::max({e.memory_us, e.latency_bound_us, e.compute_us});
  e.stage_us[Stage::k_load] = std::max(e.memory_us, e.latency_bound_us) * k_share;
  e.stage_us[Stage::v_load] = std::max(e.memory_us, e.latency_bound_us) * (1 - k_share);
  if (p.splits > 1) e.stage_us[Stage::combine] = fit.combine_us;
  // fp8_qk: each CTA quantizes its <= 8 Q rows in its prologue (amax, scale, convert)
  if (op.k_path == KPath::fp8_qk) e.stage_us[Stage::q_quant] = kMmaRows * d * (1 / cvt + 2 / fp32) * share;
  e.limit = e.ii_us == e.memory_us ? "memory" : e.ii_us == e.latency_bound_us ? "ring latency" : compute_limit;
  e.latency_us = fit.launch_us + static_cast<double>(p.waves) * (fit.wave_fill_us + p.tiles_per_cta * e.ii_us) +
                 (p.splits > 1 ? fit.combine_us : 0.0) +
                 (e.stage_us.has(Stage::q_quant) ? e.stage_us[Stage::q_quant] : 0.0);
  return e;
}

}  // namespace tilepath::perf
