// The CPU decode step. Ablations compile one named stage call out of the main loop, or
// run it twice (template parameter Ablation), and the timed instantiation wraps each call in a
// steady_clock pair, so "removed" and "isolated" stage costs come from the same code.
#include "backends/cpu/decode_kernel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include "backends/cpu/tile_stages.h"
#include "core/numerics/fp8.h"

namespace tilepath::cpu {

using numerics::DecodeProblem;
using Clock = std::chrono::steady_clock;

namespace {

// Ablation of one named stage, chosen at compile time: compiled out, or run twice.
struct NoAblation {
  static constexpr int removed = kNoAblation, doubled = kNoAblation;
};
template <int Stage>
struct RemoveStage {
  static constexpr int removed = Stage, doubled = kNoAblation;
};
template <int Stage>
struct DoubleStage {
  static constexpr int removed = kNoAblation, doubled = Stage;
};

// Run stage `Id` unless it is the one compiled out (twice if it is the doubled one);
// time it in the timed kernel.
template <class Ablation, bool Timed, int Id, class Fn>
inline void stage(std::array<double, TP_STAGE_COUNT>& ns, Fn&& fn) {
  if constexpr (Ablation::removed == Id) {
    return;
  } else if constexpr (Ablation::doubled == Id) {
    fn();
    fn();
  } else if constexpr (Timed) {
    const auto start = Clock::now();
    fn();
    ns[Id] += std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  } else {
    fn();
  }
}

struct StepBuffers {
  std::vector<std::uint8_t> q8;    // [batch][q_heads][D] (fp8_qk)
  std::vector<float> q_scale;      // [batch][q_heads]
  std::vector<float> partial_out;  // [splits][batch][q_heads][D]
  std::vector<float> partial_lse;  // [splits][batch][q_heads]
};

struct WorkItem {
  int batch = 0, kv_head = 0, split = 0;
};

// Set up Q and the score/output scales of one work item.
void load_q(const VariantPlan& plan, const StepBuffers& step, int b, int kv_head, TileScratch& s) {
  const DecodeProblem& p = *plan.problem;
  const int D = plan.head_dim, G = plan.group_size;
  const auto& table = plan.fnuz ? e4m3_fnuz_table() : e4m3_table();
  const std::size_t head_row = p.k_scale.size() > 1 ? kv_head : 0;
  for (int g = 0; g < G; ++g) {
    const std::size_t row = static_cast<std::size_t>(b) * p.op.q_heads + kv_head * G + g;
    float* q = &s.q[static_cast<std::size_t>(g) * D];
    s.bias_scale[g] = 0;
    if (plan.k == KOperand::e4m3_fp8_qk) {
      // FP8 x FP8: unscaled E4M3 operands, q_scale * k_scale moved into score space
      // (MXFP8 K: qk applies each block's 2^X itself; k_scale is 1.0 and not used).
      const float q_scale = step.q_scale[row];
      for (int d = 0; d < D; ++d) q[d] = table[step.q8[row * D + d]];
      s.score_scale[g] =
          plan.k_block_scaled ? q_scale * plan.softmax_scale : q_scale * p.k_scale[head_row] * plan.softmax_scale;
      s.bias_scale[g] = q_scale * plan.softmax_scale;  // prebias: k_bias adds (q8 . b_t) * this
    } else {
      for (int d = 0; d < D; ++d) q[d] = numerics::bf16_to_float(p.q[row * D + d]);
      s.score_scale[g] = plan.softmax_scale;
      s.bias_scale[g] = plan.softmax_scale;
    }
  }
  // k_only: P8 carries p_scale (kPScale, or kFnuzPScale for gfx942 numerics); a per-head v_scale joins
  // it here (MXFP8 V: pv applied the block scales).
  const float v_scale = plan.v_block_scaled ? 1.0f : p.v_scale[p.v_scale.size() > 1 ? kv_head : 0];
  s.out_scale = plan.v == VOperand::e4m3_direct ? v_scale / plan.p_scale : 1.0f;
  std::fill(s.m.begin(), s.m.end(), -INFINITY);
  std::fill(s.l.begin(), s.l.end(), 0.0f);
  std::fill(s.acc.begin(), s.acc.end(), 0.0f);
}

// The tiles [first, last) of one work item through all named stages.
template <class Ablation, bool Timed>
long long run_tiles(const VariantPlan& plan, const std::int32_t* page_row, int kv_head, int length, int first_tile,
                    int last_tile, TileScratch& s, std::array<double, TP_STAGE_COUNT>& ns) {
  for (int tile_index = first_tile; tile_index < last_tile; ++tile_index) {
    TileRef tile;
    tile.page_row = page_row;
    tile.first_token = tile_index * kTileTokens;
    tile.tokens = std::min(kTileTokens, length - tile.first_token);
    tile.kv_head = kv_head;
    if (plan.staged_kv) {
      // separate_kv: both operands are loaded and prepared into staged tiles first.
      stage<Ablation, Timed, TP_STAGE_K_LOAD>(ns, [&] { k_load(plan, tile, s); });
      stage<Ablation, Timed, TP_STAGE_V_LOAD>(ns, [&] { v_load(plan, tile, s); });
      stage<Ablation, Timed, TP_STAGE_K_PREP>(ns, [&] { k_prep(plan, tile, s); });
      stage<Ablation, Timed, TP_STAGE_V_PREP>(ns, [&] { v_prep(plan, tile, s); });
      stage<Ablation, Timed, TP_STAGE_QK>(ns, [&] { qk(plan, tile, s); });
      stage<Ablation, Timed, TP_STAGE_K_BIAS>(ns, [&] { k_bias(plan, tile, s); });
      stage<Ablation, Timed, TP_STAGE_SOFTMAX>(ns, [&] { softmax(plan, tile, s); });
    } else {
      // full / k_only / none: K prepared next to QK, V next to PV.
      stage<Ablation, Timed, TP_STAGE_K_LOAD>(ns, [&] { k_load(plan, tile, s); });
      stage<Ablation, Timed, TP_STAGE_K_PREP>(ns, [&] { k_prep(plan, tile, s); });
      stage<Ablation, Timed, TP_STAGE_QK>(ns, [&] { qk(plan, tile, s); });
      stage<Ablation, Timed, TP_STAGE_K_BIAS>(ns, [&] { k_bias(plan, tile, s); });
      stage<Ablation, Timed, TP_STAGE_SOFTMAX>(ns, [&] { softmax(plan, tile, s); });
      stage<Ablation, Timed, TP_STAGE_V_LOAD>(ns, [&] { v_load(plan, tile, s); });
      stage<Ablation, Timed, TP_STAGE_V_PREP>(ns, [&] { v_prep(plan, tile, s); });
    }
    stage<Ablation, Timed, TP_STAGE_PV>(ns, [&] { pv(plan, tile, s); });
    stage<Ablation, Timed, TP_STAGE_ACCUM>(ns, [&] { accum(plan, tile, s); });
  }
  return last_tile - first_tile;
}

template <class Ablation, bool Timed>
DecodeOutcome run_decode_impl(const DecodeLaunch& launch) {
  const DecodeProblem& p = *launch.problem;
  const OperatingPoint& op = p.op;
  VariantPlan plan = make_variant_plan(p, launch.rope);
  if (launch.fnuz) {
    if (plan.k_block_scaled || plan.v_block_scaled || plan.rope || plan.bias_rope)
      throw std::invalid_argument("cpu kernel: gfx942 numerics take a plain post-RoPE cache (no mxfp8 or prebias)");
    plan.fnuz = true;
    plan.p_scale = numerics::kFnuzPScale;
  }
  const std::vector<std::int32_t>& lengths = launch.lengths.empty() ? p.lengths : launch.lengths;
  const int D = op.head_dim, G = plan.group_size, splits = std::max(1, launch.splits);
  const std::size_t out_rows = static_cast<std::size_t>(op.batch) * op.q_heads;

  DecodeOutcome outcome;
  outcome.out.assign(out_rows * D, 0.0f);
  StepBuffers step;
  std::array<double, TP_STAGE_COUNT> main_ns{};

  // ---- q_quant: Q -> E4M3 per (request, q head), once per step (fp8_qk) ----
  if (plan.k == KOperand::e4m3_fp8_qk) {
    step.q8.assign(out_rows * D, 0);
    step.q_scale.assign(out_rows, 1.0f);
    stage<Ablation, Timed, TP_STAGE_Q_QUANT>(main_ns, [&] {
      for (std::size_t row = 0; row < out_rows; ++row) {
        step.q_scale[row] = plan.fnuz ? numerics::quantize_q_row_e4m3_fnuz(&p.q[row * D], D, &step.q8[row * D])
                                      : numerics::quantize_q_row_e4m3(&p.q[row * D], D, &step.q8[row * D]);
      }
    });
  }
  if (splits > 1) {
    step.partial_out.assign(static_cast<std::size_t>(splits) * out_rows * D, 0.0f);
    step.partial_lse.assign(static_cast<std::size_t>(splits) * out_rows, -INFINITY);
  }

  // ---- main loop: work items (request, kv head, split) over threads ----
  const int item_count = op.batch * op.kv_heads * splits;
  outcome.work_items = item_count;
  const int workers = std::max(1, std::min(launch.threads, item_count));
  std::atomic<int> next_item{0};
  std::atomic<int> items_done{0};
  std::atomic<bool> stop{false};
  std::vector<long long> worker_tiles(workers, 0);
  std::vector<std::array<double, TP_STAGE_COUNT>> worker_ns(workers);

  auto worker = [&](int worker_index) {
    TileScratch s;
    s.resize(G, D);
    auto& ns = worker_ns[worker_index];
    ns.fill(0.0);
    const bool polls = worker_index == 0 && launch.poll;
    for (int item = next_item++; item < item_count && !stop.load(std::memory_order_relaxed); item = next_item++) {
      const int split = item % splits;
      const int kv_head = (item / splits) % op.kv_heads;
      const int b = item / (splits * op.kv_heads);
      const int length = lengths[b];
      const int tiles = (length + kTileTokens - 1) / kTileTokens;
      const int tiles_per_split = (tiles + splits - 1) / splits;
      const int first_tile = std::min(tiles, split * tiles_per_split);
      const int last_tile = std::min(tiles, first_tile + tiles_per_split);

      load_q(plan, step, b, kv_head, s);
      const std::int32_t* page_row = &p.page_table[static_cast<std::size_t>(b) * p.max_pages_per_seq];
      worker_tiles[worker_index] +=
          run_tiles<Ablation, Timed>(plan, page_row, kv_head, length, first_tile, last_tile, s, ns);

      // Finish: O = acc / l, stored as BF16 (one split) or as a float partial with its LSE.
      for (int g = 0; g < G; ++g) {
        const std::size_t row = static_cast<std::size_t>(b) * op.q_heads + kv_head * G + g;
        const float inv_l = s.l[g] > 0 ? 1.0f / s.l[g] : 0.0f;
        const float* acc = &s.acc[static_cast<std::size_t>(g) * D];
        if (splits == 1) {
          for (int d = 0; d < D; ++d) outcome.out[row * D + d] = numerics::round_bf16(acc[d] * inv_l);
        } else {
          float* partial = &step.partial_out[(split * out_rows + row) * D];
          for (int d = 0; d < D; ++d) partial[d] = acc[d] * inv_l;
          step.partial_lse[split * out_rows + row] = s.l[g] > 0 ? s.m[g] + std::log(s.l[g]) : -INFINITY;
        }
      }
      const int done = ++items_done;
      if (polls && launch.poll(static_cast<double>(done) / item_count)) stop = true;
    }
  };
  {
    std::vector<std::thread> pool;
    for (int w = 1; w < workers; ++w) pool.emplace_back(worker, w);
    worker(0);
    for (auto& t : pool) t.join();
  }
  outcome.cancelled = stop.load();
  for (int w = 0; w < workers; ++w) {
    outcome.tiles += worker_tiles[w];
    for (int i = 0; i < TP_STAGE_COUNT; ++i) main_ns[i] += worker_ns[w][i];
  }

  // ---- combine: O = sum_i exp(lse_i - lse_max) O_i / sum_i exp(lse_i - lse_max) ----
  if (splits > 1 && !outcome.cancelled) {
    stage<Ablation, Timed, TP_STAGE_COMBINE>(main_ns, [&] {
      std::vector<float> merged(D);
      for (std::size_t row = 0; row < out_rows; ++row) {
        float lse_max = -INFINITY;
        for (int i = 0; i < splits; ++i) lse_max = std::max(lse_max, step.partial_lse[i * out_rows + row]);
        std::fill(merged.begin(), merged.end(), 0.0f);
        float weight_sum = 0;
        for (int i = 0; i < splits; ++i) {
          const float lse = step.partial_lse[i * out_rows + row];
          if (lse == -INFINITY) continue;  // an empty split (request shorter than the split grid)
          const float weight = std::exp(lse - lse_max);
          weight_sum += weight;
          const float* partial = &step.partial_out[(i * out_rows + row) * D];
          for (int d = 0; d < D; ++d) merged[d] += weight * partial[d];
        }
        const float inv = weight_sum > 0 ? 1.0f / weight_sum : 0.0f;
        for (int d = 0; d < D; ++d) outcome.out[row * D + d] = numerics::round_bf16(merged[d] * inv);
      }
    });
  }
  outcome.stage_ns = main_ns;
  return outcome;
}

template <template <int> class Ablation>
DecodeOutcome run_ablated(int stage_id, const DecodeLaunch& launch) {
  switch (stage_id) {
    case TP_STAGE_K_LOAD:
      return run_decode_impl<Ablation<TP_STAGE_K_LOAD>, false>(launch);
    case TP_STAGE_K_PREP:
      return run_decode_impl<Ablation<TP_STAGE_K_PREP>, false>(launch);
    case TP_STAGE_QK:
      return run_decode_impl<Ablation<TP_STAGE_QK>, false>(launch);
    case TP_STAGE_SOFTMAX:
      return run_decode_impl<Ablation<TP_STAGE_SOFTMAX>, false>(launch);
    case TP_STAGE_V_LOAD:
      return run_decode_impl<Ablation<TP_STAGE_V_LOAD>, false>(launch);
    case TP_STAGE_V_PREP:
      return run_decode_impl<Ablation<TP_STAGE_V_PREP>, false>(launch);
    case TP_STAGE_PV:
      return run_decode_impl<Ablation<TP_STAGE_PV>, false>(launch);
    case TP_STAGE_ACCUM:
      return run_decode_impl<Ablation<TP_STAGE_ACCUM>, false>(launch);
    case TP_STAGE_Q_QUANT:
      return run_decode_impl<Ablation<TP_STAGE_Q_QUANT>, false>(launch);
    case TP_STAGE_COMBINE:
      return run_decode_impl<Ablation<TP_STAGE_COMBINE>, false>(launch);
    case TP_STAGE_K_BIAS:
      return run_decode_impl<Ablation<TP_STAGE_K_BIAS>, false>(launch);
  }
  return run_decode_impl<NoAblation, false>(launch);
}

}  // namespace

DecodeOutcome run_decode(const DecodeLaunch& launch) {
  if (launch.stage_timers) return run_decode_impl<NoAblation, true>(launch);
  if (launch.removed_stage != kNoAblation) return run_ablated<RemoveStage>(launch.removed_stage, launch);
  if (launch.doubled_stage != kNoAblation) return run_ablated<DoubleStage>(launch.doubled_stage, launch);
  return run_decode_impl<NoAblation, false>(launch);
}

int choose_splits(const DecodeProblem& p, int threads) {
  // Aim for >= 2 work items per thread; never split below 4 tiles per split.
  const int base_items = p.op.batch * p.op.kv_heads;
  const int wanted = (2 * threads + base_items - 1) / base_items;
  const int max_len = *std::max_element(p.lengths.begin(), p.lengths.end());
  const int tiles = (max_len + kTileTokens - 1) / kTileTokens;
  return std::clamp(std::min(wanted, tiles / 4), 1, 256);
}

std::string kernel_name(const OperatingPoint& op) {
  std::string name = "cpu_decode<" + std::string(to_string(op.kv)) + "," + std::string(to_string(op.k_path)) + "," +
                     std::string(to_string(op.mode)) + ",d" + std::to_string(op.head_dim);
  if (op.k_repr != KRepr::plain) name += "," + std::string(to_string(op.k_repr));  // prebias | mxfp8
  return name + ">";
}

}  // namespace tilepath::cpu
