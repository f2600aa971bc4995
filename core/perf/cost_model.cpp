#include "core/perf/cost_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "core/perf/cuda_latency_model.h"

namespace tilepath::perf {
namespace {

// ---- the modelled kernel ---------------------------------------------------
// One CTA walks the KV tiles of one (request, kv head, split). It holds the
// whole GQA group of query heads, so K and V are read once per kv head.
constexpr int kTileTokens = 64;
constexpr int kMinTilesPerSplit = 4;  // below this, split-KV overhead outweighs the extra parallelism
constexpr int kBufferDepth = 2;       // K/V shared-memory ring stages (1 when two do not fit, e.g. 64 KB LDS)
constexpr int kMmaRowGranule = 16;    // the GQA group's query rows are padded to the MMA M granule
constexpr int kThreadsPerWarpgroup = 128;
constexpr int kMaxThreadsPerSm = 2048;  // occupancy limit by threads (SM and CU alike)

// ---- fixed costs no datasheet gives (estimates, stated once here) ------------
// Per tile, online softmax also does row max/sum reductions across lanes and a
// barrier between the QK and PV warps; a fixed 0.1 us stands for that.
constexpr double kSoftmaxFixedUs = 0.10;
// FP32 element-wise operations per score besides exp: scale, max, subtract, sum, K scale.
constexpr double kSoftmaxFp32OpsPerScore = 5;
// Q quantization: an amax reduction and a barrier before the FP8 Q can be used.
constexpr double kQQuantFixedUs = 0.20;
// The models' dram_latency is an idle pointer chase; a request in a chip-wide stream
// queues behind others. Twice the idle latency is an estimate, not a measurement.
constexpr double kLoadedLatencyFactor = 2.0;

double ceil_div(double a, double b) { return std::ceil(a / b); }
double or_zero(double x) { return std::isfinite(x) ? x : 0.0; }

struct Variant {
  bool k_prep = false;   // FP8 K converted to a 16-bit operand on chip (transform path)
  bool v_prep = false;   // FP8 V converted to a 16-bit operand on chip (all modes but k_only)
  bool q_quant = false;  // fp8_qk: Q quantized to E4M3 once per step
  bool p_quant = false;  // k_only: P quantized to E4M3 so PV can consume FP8 V
  bool k_bias = false;   // post-RoPE prebias: the exact bias's q.RoPE_t(b) added to the scores
  std::string qk_path, pv_path;
};

// The matrix path FP8 operands run on: OCP E4M3 where the GPU has it; where it has only
// the FNUZ flavour (gfx942), the HIP backend re-encodes the stored OCP cache to FNUZ at
// upload (exact: the same bits at half the value, the scale doubled) and quantizes Q and P
// to FNUZ, so its kernels run the FNUZ MFMA.
std::string fp8_matrix_path(const GpuModel& gpu) {
  const MatrixPath* ocp = gpu.path("e4m3_e4m3");
  const MatrixPath* fnuz = gpu.path("e4m3fnuz_e4m3fnuz");
  if ((ocp == nullptr || !ocp->supported) && fnuz != nullptr && fnuz->supported) return fnuz->name;
  return "e4m3_e4m3";
}

Variant describe(const OperatingPoint& op, const GpuModel& gpu) {
  Variant v;
  const bool k8 = k_is_fp8(op.kv);
  const bool v8 = v_is_fp8(op.kv);
  v.k_prep = k8 && op.k_path == KPath::transform;
  v.q_quant = op.k_path == KPath::fp8_qk;
  v.v_prep = v8 && op.mode != TransformMode::k_only;
  v.p_quant = v8 && op.mode == TransformMode::k_only;
  v.k_bias = restores_bias_in_scores(op);
  // MXFP8 operands go to the block-scaled MMA, which applies their scales.
  const std::string fp8_path = op.k_repr == KRepr::mxfp8 ? "mxf8_mxf8" : fp8_matrix_path(gpu);
  v.qk_path = v.q_quant ? fp8_path : "bf16_bf16";
  v.pv_path = v.p_quant ? fp8_path : "bf16_bf16";
  return v;
}

// The modelled kernel's shape. The default is the CUDA kernels' CTA (64-token tiles,
// a K/V ring in shared memory, the whole GQA group per CTA); gfx942 models the HIP
// kernels (backends/hip/kernels/decode_traits.h): a workgroup of 4 waves, each walking
// 32-token tiles (128 tokens per step), K loaded straight into registers and only V
// staged in LDS, the next tile in flight behind the current one, and at most 16 query
// heads per workgroup (the MFMA's n16 side; larger GQA groups take several workgroups).
struct KernelShape {
  int tile_tokens = kTileTokens;
  int threads = 0;  // 0: the warpgroup roles of the default kernel
  bool k_in_registers = false;
  int max_query_rows = 0;   // 0: the whole GQA group in one CTA
  bool separate_kv = true;  // the kernels have converter warps (mode separate_kv)
  bool k_bias = true;       // the kernels have the prebias k_bias stage
};

KernelShape kernel_shape(const GpuModel& gpu) {
  KernelShape shape;
  if (gpu.arch == "gfx942") {
    shape.tile_tokens = 128;
    shape.threads = 256;
    shape.k_in_registers = true;
    shape.max_query_rows = 16;
    shape.separate_kv = false;
    shape.k_bias = false;
  }
  return shape;
}

// "" when the GPU has the matrix path, else why not.
std::string missing_path(const GpuModel& gpu, const std::string& path, const char* use) {
  const MatrixPath* p = gpu.path(path);
  if (p == nullptr) return gpu.id + " does not describe the " + path + " matrix path needed for " + use;
  if (p->supported) return "";
  return gpu.id + " has no " + path + " matrix path, needed for " + use + ": " + p->note;
}

// "" when the GPU has the matrix instruction family, else why not, naming the field and the
// families it has. A model without the list (built in code, not from a file) has mma_sync,
// what every model described before the field existed.
std::string missing_instruction(const GpuModel& gpu, Mma mma) {
  const std::string name(to_string(mma));
  const MatrixInstruction* mi = gpu.instruction(name);
  if (mi != nullptr ? mi->supported : mma == Mma::mma_sync) return "";
  std::string allowed;
  for (const MatrixInstruction& other : gpu.matrix_instructions)
    if (other.supported) allowed += (allowed.empty() ? "" : "|") + other.name;
  if (gpu.matrix_instructions.empty()) allowed = "mma_sync";
  return "mma: " + gpu.id + " has no " + name + " (its model's matrix_instructions say why); allowed here: " + allowed;
}

// Sum of the stage costs on each agent (the default assignment of DESIGN.md:
// inline conversion sits on the MMA warps, separate_kv moves it to transform warps).
std::array<double, kAgentCount> agent_busy(const StageCosts& c, TransformMode mode) {
  std::array<double, kAgentCount> busy{};
  auto add = [&](Agent a, Stage s) { busy[static_cast<int>(a)] += or_zero(c[s]); };
  add(Agent::memory, Stage::k_load);
  add(Agent::memory, Stage::v_load);
  add(mode == TransformMode::separate_kv ? Agent::transform : Agent::qk_mma, Stage::k_prep);
  add(Agent::qk_mma, Stage::qk);
  add(Agent::qk_mma, Stage::k_bias);
  add(Agent::softmax, Stage::softmax);
  add(mode == TransformMode::separate_kv ? Agent::transform : Agent::pv_mma, Stage::v_prep);
  add(Agent::pv_mma, Stage::pv);
  add(Agent::pv_mma, Stage::accum);
  return busy;
}

Stage largest_stage_on(Agent agent, const StageCosts& c, TransformMode mode) {
  Stage best = Stage::k_load;
  double best_cost = -1;
  for (Stage s : kTileStages) {
    if (!c.has(s)) continue;
    StageCosts only;
    only[s] = c[s];
    if (agent_busy(only, mode)[static_cast<int>(agent)] > 0 && c[s] > best_cost) {
      best = s;
      best_cost = c[s];
    }
  }
  return best;
}

// NVIDIA GPUs run the CUDA backend's kernels: their launch plan and the fitted model of
// core/perf/cuda_latency_model.h. Model-only where the fit comes from another GPU.
CostEstimate estimate_cuda_kernels(const OperatingPoint& op, const GpuModel& gpu, CostEstimate e) {
  namespace fs = std::filesystem;
  const std::string dir = fs::path(gpu.file).parent_path().parent_path().string();
  const CudaKernelFit fit = load_cuda_kernel_fit(gpu.id, dir.empty() ? models_dir() : dir);
  const CudaLatencyEstimate m = estimate_cuda_latency(op, gpu, fit);
  const CudaKernelPlan& p = m.plan;
  e.tile_tokens = p.tile_tokens;
  e.tiles_per_cta = p.tiles_per_cta;
  e.ctas = static_cast<int>(p.ctas);
  e.splits = p.splits;
  e.per_tile_us = m.stage_us;
  e.ii_us = m.ii_us;
  e.limiting_stage = m.limit == "memory" || m.limit == "ring latency"
                         ? (k_is_fp8(op.kv) && !v_is_fp8(op.kv) ? Stage::v_load : Stage::k_load)
                     : m.limit == "converter" ? (m.stage_us.has(Stage::k_prep) ? Stage::k_prep : Stage::v_prep)
                                              : Stage::qk;
  e.fill_us = fit.wave_fill_us;
  e.once_per_step_us = or_zero(m.stage_us[Stage::q_quant]) + or_zero(m.stage_us[Stage::combine]);
  e.launch_overhead_us = fit.launch_us;
  e.tiles_walked = static_cast<double>(p.waves) * p.tiles_per_cta;
  e.served_from_l2 = m.served_from_l2;
  e.read_bandwidth_gbps = m.served_from_l2 ? gpu.l2_read_bandwidth_gbps : gpu.read_bandwidth_gbps;
  e.ctas_per_sm = p.ctas_per_sm;
  e.concurrent_ctas = static_cast<int>(p.resident_ctas);
  e.block_threads = p.threads;
  e.smem_bytes_per_cta = p.smem_bytes;
  e.floor_us = e.bytes_moved / (e.read_bandwidth_gbps * 1e3);
  e.latency_us = m.latency_us;
  const bool model_only = fit.fitted_on != gpu.id;
  char buf[320];
  std::snprintf(buf, sizeof(buf),
                "CUDA kernels: step II %.3f us (%s); %lld CTAs (%lld resident, %d/SM), %d kv head(s)/CTA, splits %d, "
                "%d warps x %d-stage ring, %lld waves; fit %s%s",
                m.ii_us, m.limit.c_str(), p.ctas, p.resident_ctas, p.ctas_per_sm, p.kv_heads_per_cta, p.splits,
                p.mma_warps_per_head, p.stages, p.waves, fit.file.c_str(),
                model_only ? (", model-only: fitted on " + fit.fitted_on).c_str() : "");
  e.notes = buf;
  // The fit was made on mma_sync kernels only; a wgmma kernel's rates are the datasheet's, though
  // its measurements sit beside the mma_sync ones in the bundled database.
  if (op.mma == Mma::wgmma)
    e.notes += "; mma wgmma: model-only (FP8 MMAs at the e4m3_e4m3 dense rate; no wgmma kernel in the fit)";
  return e;
}

}  // namespace

int auto_splits(const OperatingPoint& op, const GpuModel& gpu, int tile_tokens) {
  if (op.splits > 0) return op.splits;
  const long long base_ctas = static_cast<long long>(op.batch) * op.kv_heads;
  if (base_ctas >= gpu.sm_count) return 1;  // the batch already fills the SMs
  const long long tiles = (op.max_context() + tile_tokens - 1) / tile_tokens;
  const long long max_splits = std::max<long long>(1, tiles / kMinTilesPerSplit);
  const long long want = (gpu.sm_count + base_ctas - 1) / base_ctas;
  return static_cast<int>(std::clamp<long long>(want, 1, max_splits));
}

CostEstimate estimate_costs(const OperatingPoint& op, const GpuModel& gpu) {
  op.validate();  // throws ValidationError naming the bad field
  CostEstimate e;
  e.tile_tokens = kTileTokens;
  e.bytes_moved = op.bytes_moved();
  e.launch_overhead_us = gpu.launch_overhead_us;

  if (std::string why = missing_instruction(gpu, op.mma); !why.empty()) {
    e.supported = false;
    e.why_unsupported = why;
    return e;
  }
  if (op.k_repr == KRepr::mxfp8) {
    // Modelled where a block-scaled MMA exists (the NVIDIA kernels' model): the scales are
    // read with the elements and applied by the MMA, or in the tile where an operand is
    // converted.
    const MatrixPath* block_scaled = gpu.path("mxf8_mxf8");
    if (block_scaled == nullptr || !block_scaled->supported || gpu.vendor != "NVIDIA") {
      e.supported = false;
      e.why_unsupported =
          "k_repr: mxfp8 is modelled on GPUs with a block-scaled MMA (matrix path mxf8_mxf8, e.g. "
          "b200); " +
          gpu.id + " has none; allowed here: plain|prebias";
      return e;
    }
  }
  const Variant v = describe(op, gpu);
  const KernelShape shape = kernel_shape(gpu);
  e.tile_tokens = shape.tile_tokens;
  if (op.mode == TransformMode::separate_kv && !shape.separate_kv) {
    e.supported = false;
    e.why_unsupported = "mode: the " + gpu.arch + " kernels (backends/hip) have no separate_kv; allowed: full, k_only";
    return e;
  }
  if (v.k_bias && !shape.k_bias) {
    e.supported = false;
    e.why_unsupported =
        "k_repr: the " + gpu.arch + " kernels (backends/hip) have no k_bias stage for prebias; allowed: plain";
    return e;
  }
  e.qk_matrix_path = v.qk_path;
  e.pv_matrix_path = v.pv_path;
  for (const auto& [path, use] : {std::pair{v.qk_path, "QK"}, std::pair{v.pv_path, "PV"}}) {
    if (std::string why = missing_path(gpu, path, use); !why.empty()) {
      e.supported = false;
      e.why_unsupported = why;
      return e;
    }
  }

  // Hopper and Blackwell run the CUDA backend's sm_90a-shaped kernels.
  if (gpu.vendor == "NVIDIA" && (gpu.arch.rfind("sm_9", 0) == 0 || gpu.arch.rfind("sm_10", 0) == 0))
    return estimate_cuda_kernels(op, gpu, std::move(e));

  // ---- shape of the modelled CTA ----
  const int T = shape.tile_tokens;
  const int D = op.head_dim;
  // CTAs per (request, kv head, split) and the query rows each holds, padded to the MMA granule (M_pad)
  const int head_chunks =
      shape.max_query_rows > 0 ? static_cast<int>(ceil_div(op.gqa_ratio(), shape.max_query_rows)) : 1;
  const int m_rows = static_cast<int>(ceil_div(ceil_div(op.gqa_ratio(), head_chunks), kMmaRowGranule)) * kMmaRowGranule;
  const double k_bytes = k_is_fp8(op.kv) ? 1 : 2;
  const double v_bytes = v_is_fp8(op.kv) ? 1 : 2;
  const double k_tile_bytes = T * D * k_bytes;  // (T, D) K tile
  const double v_tile_bytes = T * D * v_bytes;  // (T, D) V tile
  const bool staged = op.mode == TransformMode::separate_kv;
  const double staged_bytes = staged ? T * D * 2.0 * ((v.k_prep ? 1 : 0) + (v.v_prep ? 1 : 0)) : 0;
  const double q_tile_bytes = m_rows * D * 2.0;
  int depth = kBufferDepth;
  auto smem_bytes = [&](int ring_depth) {
    // K in registers: LDS holds the V tile, or the merge of the waves' (m, l, O) after the loop
    if (shape.k_in_registers) return static_cast<int>(std::max(v_tile_bytes, (2.0 * 4 * m_rows + m_rows * D) * 4));
    return static_cast<int>(ring_depth * (k_tile_bytes + v_tile_bytes) + staged_bytes + q_tile_bytes);
  };
  if (smem_bytes(depth) > gpu.smem_per_sm_bytes) depth = 1;  // a single stage: less in flight, see Little's law below
  e.smem_bytes_per_cta = smem_bytes(depth);
  if (e.smem_bytes_per_cta > gpu.smem_per_sm_bytes) {
    e.supported = false;
    e.why_unsupported = gpu.id + ": the modelled CTA needs " + std::to_string(e.smem_bytes_per_cta / 1024) +
                        " KB of shared memory, more than the " +
                        std::to_string(static_cast<int>(gpu.smem_per_sm_bytes / 1024)) + " KB per SM (head_dim " +
                        std::to_string(D) + ")";
    return e;
  }
  // A producer warpgroup and a consumer warpgroup, plus transform warps for separate_kv.
  e.block_threads = shape.threads > 0 ? shape.threads : kThreadsPerWarpgroup * (staged ? 3 : 2);

  // ---- grid and residency ----
  e.splits = auto_splits(op, gpu, T);
  e.ctas = op.batch * op.kv_heads * head_chunks * e.splits;
  const int slots_per_sm = std::max(
      1, std::min(static_cast<int>(gpu.smem_per_sm_bytes / e.smem_bytes_per_cta), kMaxThreadsPerSm / e.block_threads));
  e.ctas_per_sm = std::min(slots_per_sm, static_cast<int>(ceil_div(e.ctas, gpu.sm_count)));
  e.concurrent_ctas = std::min(e.ctas, gpu.sm_count * e.ctas_per_sm);

  // Tiles: each request's context is cut into tiles, then shared among its splits.
  long long total_cta_tiles = 0;
  e.tiles_per_cta = 0;
  for (int r = 0; r < op.batch; ++r) {
    const int len = op.context_lengths.empty() ? op.context : op.context_lengths[r];
    const long long tiles = static_cast<long long>(ceil_div(len, T));
    const long long per_split = static_cast<long long>(ceil_div(static_cast<double>(tiles), e.splits));
    e.tiles_per_cta = std::max(e.tiles_per_cta, per_split);
    total_cta_tiles += per_split * e.splits * op.kv_heads * head_chunks;
  }
  // One resident CTA slot walks its own tiles and those of later waves; the
  // longest CTA bounds it from below.
  e.tiles_walked =
      std::max(static_cast<double>(e.tiles_per_cta), static_cast<double>(total_cta_tiles) / e.concurrent_ctas);

  // ---- memory: the read bandwidth shared by all CTAs resident at once ----
  const double kv_bytes = static_cast<double>(op.total_tokens()) * op.kv_heads * D * (k_bytes + v_bytes);
  e.served_from_l2 = kv_served_from_l2(op.cache == CacheState::l2_warm, kv_bytes, gpu);
  e.read_bandwidth_gbps = e.served_from_l2 ? gpu.l2_read_bandwidth_gbps : gpu.read_bandwidth_gbps;
  const double latency_ns = gpu.dram_latency_ns * kLoadedLatencyFactor * (e.served_from_l2 ? kL2LatencyFraction : 1.0);
  // Little's law: a CTA cannot stream faster than its ring's bytes in flight per memory latency.
  const double in_flight_gbps = depth * (k_tile_bytes + v_tile_bytes) / latency_ns;  // bytes/ns = GB/s
  const double cta_gbps = std::min(e.read_bandwidth_gbps / e.concurrent_ctas, in_flight_gbps);
  auto transfer_us = [](double bytes, double gbps) { return bytes / (gbps * 1e3); };  // 1 GB/s = 1e3 bytes/us

  // ---- on-chip rates of one CTA: the SM's units shared by the CTAs resident on it ----
  const double share = 1.0 / e.ctas_per_sm;
  auto matrix_flop_per_us = [&](const std::string& path) {
    return gpu.path(path)->dense_tflops * 1e6 / gpu.sm_count * share;  // TFLOP/s -> flop/us per SM
  };
  const double cvt_per_us = gpu.cvt_fp8_operand_per_sm_per_clk * gpu.clock_mhz * share;  // clock_mhz = clk/us
  const double exp_per_us = gpu.sfu_exp_per_sm_per_clk * gpu.clock_mhz * share;
  const double fp32_per_us = gpu.fp32_tflops * 1e6 / 2 / gpu.sm_count * share;  // FMA counts 2 flops
  const double scores = static_cast<double>(m_rows) * T;                        // (M_pad, T) score tile

  StageCosts& c = e.per_tile_us;
  c[Stage::k_load] = transfer_us(k_tile_bytes, cta_gbps);
  c[Stage::v_load] = transfer_us(v_tile_bytes, cta_gbps);
  if (v.k_prep) {
    c[Stage::k_prep] = T * D / cvt_per_us;
    // pre-RoPE prebias: the exact bias is added back to every converted element before the rotation.
    if (op.k_repr == KRepr::prebias && op.rope == RopeLayout::pre_rope) c[Stage::k_prep] += T * D / fp32_per_us;
  }
  c[Stage::qk] = 2.0 * m_rows * T * D / matrix_flop_per_us(v.qk_path);  // S = Q·Kᵀ
  c[Stage::softmax] = scores / exp_per_us + scores * kSoftmaxFp32OpsPerScore / fp32_per_us + kSoftmaxFixedUs;
  if (v.p_quant) c[Stage::softmax] += scores / cvt_per_us;  // P -> E4M3 for the FP8 PV
  if (v.k_bias) {
    // S += q·RoPE_t(b): per row, the bias's D/2 rotation coefficients turned from one tile to
    // the next (four FMAs per pair), then a 16-bit MMA of QK's shape against a fixed (D, T)
    // cos/sin table (backends/cuda/README.md, "Prebias K").
    const double pairs = static_cast<double>(m_rows) * D / 2;
    c[Stage::k_bias] = pairs * 4 / fp32_per_us + 2.0 * m_rows * T * D / matrix_flop_per_us("bf16_bf16");
  }
  if (v.v_prep) c[Stage::v_prep] = T * D / cvt_per_us;
  c[Stage::pv] = 2.0 * m_rows * T * D / matrix_flop_per_us(v.pv_path);  // O += P·V
  c[Stage::accum] = static_cast<double>(m_rows) * D / fp32_per_us;      // O *= exp(m_old - m_new)

  // ---- once per step ----
  if (v.q_quant) {
    // Each CTA quantizes its group's Q rows in its prologue: amax, scale, convert.
    c[Stage::q_quant] = static_cast<double>(m_rows) * D * (1 / cvt_per_us + 2 / fp32_per_us) + kQQuantFixedUs;
  }
  if (e.splits > 1) {
    // A second kernel merges the split partials: read FP32 O and LSE per split, write BF16 O.
    const double partial_bytes = static_cast<double>(op.batch) * op.q_heads * e.splits * (D * 4.0 + 4.0);
    const double out_bytes = static_cast<double>(op.batch) * op.q_heads * D * 2.0;
    c[Stage::combine] = transfer_us(partial_bytes + out_bytes, gpu.read_bandwidth_gbps) + gpu.launch_overhead_us;
  }
  e.once_per_step_us = or_zero(c[Stage::q_quant]) + or_zero(c[Stage::combine]);

  // ---- steady state: II = max over agents of their summed stage costs ----
  const auto busy = agent_busy(c, op.mode);
  const auto busiest = std::max_element(busy.begin(), busy.end());
  e.ii_us = *busiest;
  e.limiting_stage = largest_stage_on(static_cast<Agent>(busiest - busy.begin()), c, op.mode);

  // First tile through the pipeline: memory latency, then the K chain and the V
  // chain (V loads after K on the one memory pipe) meet at PV.
  const double k_chain = or_zero(c[Stage::k_load]) + or_zero(c[Stage::k_prep]) + c[Stage::qk] + c[Stage::softmax];
  const double v_chain = c[Stage::k_load] + c[Stage::v_load] + or_zero(c[Stage::v_prep]);
  e.fill_us = latency_ns * 1e-3 + std::max(k_chain, v_chain) + c[Stage::pv] + c[Stage::accum];

  // Q, O, scales and the page table are not in the tiles; they cross at the same bandwidth.
  const double other_bytes = std::max(0.0, e.bytes_moved - kv_bytes);
  e.floor_us = transfer_us(e.bytes_moved, e.read_bandwidth_gbps);
  e.latency_us = e.once_per_step_us + e.fill_us + (e.tiles_walked - 1) * e.ii_us +
                 transfer_us(other_bytes, e.read_bandwidth_gbps) + e.launch_overhead_us;

  char buf[320];
  std::snprintf(
      buf, sizeof(buf),
      "II %.3f us limited by %s; %d CTAs (%d resident, %d/SM), splits %d, %d-stage ring%s; %.1f tiles walked; "
      "model-only: datasheet rates, not fitted to measurements",
      e.ii_us, std::string(to_string(e.limiting_stage)).c_str(), e.ctas, e.concurrent_ctas, e.ctas_per_sm, e.splits,
      depth, e.served_from_l2 ? ", KV served from L2" : "", e.tiles_walked);
  e.notes = buf;
  return e;
}

}  // namespace tilepath::perf
