// measure_case: one operating point end to end on the CPU.
//   generate -> read ceiling -> warmup + timed repeats -> (half-context repeats for the
//   tile interval) -> (timed-stage runs and one run set per removed stage) -> reference.
#include "backends/cpu/case_measurement.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "backends/cpu/decode_kernel.h"
#include "backends/cpu/read_bandwidth.h"
#include "core/numerics/case_gate.h"
#include "core/numerics/fnuz_decode_emulation.h"
#include "core/stage.h"

namespace tilepath::cpu {

using numerics::DecodeProblem;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Cancelled {};  // unwinds measure_case when the host asks to stop

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double elapsed_us(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

int ablation_repeats(const MeasureOptions& o) { return std::max(3, o.repeats / 2); }

// Runs the kernel `warmup + repeats` times; returns the timed latencies and the last outcome.
struct TimedRuns {
  std::vector<double> latencies_us;
  DecodeOutcome last;
};

TimedRuns time_kernel(DecodeLaunch launch, int warmup, int repeats, RunProgress& progress, const char* phase) {
  TimedRuns runs;
  for (int i = 0; i < warmup + repeats; ++i) {
    launch.poll = [&](double fraction) { return progress.poll(phase, fraction); };
    const auto start = std::chrono::steady_clock::now();
    DecodeOutcome outcome = run_decode(launch);
    const double us = elapsed_us(start);
    if (outcome.cancelled || progress.next_unit(phase)) throw Cancelled{};
    if (i >= warmup) runs.latencies_us.push_back(us);
    runs.last = std::move(outcome);
  }
  return runs;
}

// Requests whose output is checked against the float64 reference: all of them while
// the reference stays under ~2^27 multiply-adds per pass, else an evenly spaced sample
// (first and last included) that fits, so the default-size case verifies in seconds.
std::vector<int> requests_to_verify(const DecodeProblem& p) {
  constexpr double kReferenceBudget = double(1 << 27);
  const double per_token = static_cast<double>(p.op.q_heads) * p.op.head_dim;
  const double total = static_cast<double>(p.op.total_tokens()) * per_token;
  std::vector<int> requests;
  if (total <= kReferenceBudget) {
    for (int b = 0; b < p.op.batch; ++b) requests.push_back(b);
    return requests;
  }
  const int max_len = *std::max_element(p.lengths.begin(), p.lengths.end());
  const int count = std::clamp(static_cast<int>(kReferenceBudget / (per_token * max_len)), 2, p.op.batch);
  for (int i = 0; i < count; ++i) {
    const int b = static_cast<int>(static_cast<long long>(i) * (p.op.batch - 1) / (count - 1));
    if (requests.empty() || requests.back() != b) requests.push_back(b);
  }
  return requests;
}

}  // namespace

CaseMeasurement::CaseMeasurement() : tile_interval_us(kNaN) {
  for (auto& row : stage_cost_us) row.fill(kNaN);
}

int progress_units(const MeasureOptions& o) {
  int units = 4 + o.warmup + o.repeats;  // generate, bandwidth, reference, save
  if (o.ablations & TP_ABLATE_TILE_INTERVAL) units += 1 + o.repeats;
  if (o.ablations & TP_ABLATE_STAGE_COSTS) units += (1 + 2 * TP_STAGE_COUNT) * (1 + ablation_repeats(o));
  return units;
}

std::array<bool, TP_STAGE_COUNT> stages_present(const OperatingPoint& op, int splits) {
  std::array<bool, TP_STAGE_COUNT> present{};
  for (int s : {TP_STAGE_K_LOAD, TP_STAGE_QK, TP_STAGE_SOFTMAX, TP_STAGE_V_LOAD, TP_STAGE_PV, TP_STAGE_ACCUM})
    present[s] = true;
  present[TP_STAGE_K_PREP] = k_is_fp8(op.kv) && op.k_path == KPath::transform;
  present[TP_STAGE_V_PREP] = v_is_fp8(op.kv) && op.mode != TransformMode::k_only;
  present[TP_STAGE_Q_QUANT] = op.k_path == KPath::fp8_qk;
  present[TP_STAGE_COMBINE] = splits > 1;
  present[TP_STAGE_K_BIAS] = restores_bias_in_scores(op);
  return present;
}

CaseMeasurement measure_case(const OperatingPoint& op, const MeasureOptions& options, RunProgress& progress,
                             ReadBandwidthProbe& bandwidth_probe) {
  CaseMeasurement m;
  try {
    // ---- inputs ----
    if (progress.poll("generate", 0.0)) throw Cancelled{};
    auto start = std::chrono::steady_clock::now();
    const DecodeProblem problem = numerics::make_problem(op, options.seed, options.keys, &options.key_model);
    m.generation_ms = elapsed_us(start) / 1000;
    if (progress.next_unit("bandwidth")) throw Cancelled{};
    m.read_bandwidth_gbps = bandwidth_probe.measure_gbps(options.threads);
    if (progress.next_unit("warmup")) throw Cancelled{};

    // The kernel's cos/sin cache for a pre-RoPE layout (and for the rotated bias of a
    // post-RoPE prebias cache), built once like a model's rotary cache.
    const numerics::RopeTable rope =
        op.rope == RopeLayout::pre_rope || !problem.k_bias.empty()
            ? numerics::RopeTable::build(*std::max_element(problem.lengths.begin(), problem.lengths.end()), op.head_dim)
            : numerics::RopeTable{};
    // gfx942 numerics: the same values in E4M3 FNUZ bytes with doubled scales (exact).
    const DecodeProblem fnuz_problem = options.fnuz ? numerics::to_fnuz_cache(problem) : DecodeProblem{};
    DecodeLaunch launch;
    launch.problem = options.fnuz ? &fnuz_problem : &problem;
    launch.fnuz = options.fnuz;
    launch.rope = &rope;
    launch.threads = options.threads;
    launch.splits = op.splits > 0 ? op.splits : choose_splits(problem, options.threads);
    m.splits = launch.splits;

    // ---- latency ----
    TimedRuns main_runs = time_kernel(launch, options.warmup, options.repeats, progress, "timing");
    m.latencies_us = main_runs.latencies_us;
    m.latency_median_us = median(m.latencies_us);
    m.latency_min_us = *std::min_element(m.latencies_us.begin(), m.latencies_us.end());
    m.latency_max_us = *std::max_element(m.latencies_us.begin(), m.latencies_us.end());
    m.out = std::move(main_runs.last.out);
    m.tiles = main_runs.last.tiles;
    m.work_items = main_runs.last.work_items;
    m.workers = std::max(1, std::min(options.threads, m.work_items));
    m.samples["latency_us"] = m.latencies_us;
    m.samples["tiles"] = m.tiles;
    m.samples["workers"] = m.workers;
    m.samples["splits"] = m.splits;
    m.samples["tile_tokens"] = 64;
    // Per-tile time on one worker = (total time) * workers / tiles: the unit every stage cost uses.
    const double per_tile_factor = m.tiles > 0 ? static_cast<double>(m.workers) / m.tiles : kNaN;

    // ---- tile interval: slope of latency over context (S vs S/2, same cache) ----
    if (options.ablations & TP_ABLATE_TILE_INTERVAL) {
      DecodeLaunch half = launch;
      half.lengths = problem.lengths;
      for (auto& len : half.lengths) len = std::max(1, len / 2);
      TimedRuns half_runs = time_kernel(half, 1, options.repeats, progress, "tile_interval");
      const long long tile_delta = m.tiles - half_runs.last.tiles;
      const double latency_delta = m.latency_median_us - median(half_runs.latencies_us);
      if (tile_delta > 0) m.tile_interval_us = latency_delta * m.workers / tile_delta;
      m.samples["half_context_latency_us"] = half_runs.latencies_us;
      m.samples["half_context_tiles"] = half_runs.last.tiles;
    }

    // ---- stage costs: isolated (timers around each named call), removed (stage compiled
    // out) and doubled (stage run twice) ----
    if (options.ablations & TP_ABLATE_STAGE_COSTS) {
      const auto present = stages_present(op, m.splits);
      const int repeats = ablation_repeats(options);
      DecodeLaunch timed = launch;
      timed.stage_timers = true;
      std::array<double, TP_STAGE_COUNT> stage_ns{};
      long long timed_tiles = 0;
      for (int i = 0; i < 1 + repeats; ++i) {
        timed.poll = [&](double f) { return progress.poll("stage_timers", f); };
        DecodeOutcome outcome = run_decode(timed);
        if (outcome.cancelled || progress.next_unit("stage_timers")) throw Cancelled{};
        if (i == 0) continue;  // warm-up
        for (int s = 0; s < TP_STAGE_COUNT; ++s) stage_ns[s] += outcome.stage_ns[s];
        timed_tiles += outcome.tiles;
      }
      nlohmann::json isolated, removed, doubled;
      for (int s = 0; s < TP_STAGE_COUNT; ++s) {
        if (!present[s]) continue;
        const bool per_step = s == TP_STAGE_Q_QUANT || s == TP_STAGE_COMBINE;
        // Per-tile stages: summed thread time / tiles; once-per-step stages: time per step.
        const double isolated_us =
            per_step ? stage_ns[s] / 1000.0 / repeats : (timed_tiles > 0 ? stage_ns[s] / 1000.0 / timed_tiles : kNaN);
        m.stage_cost_us[TP_COST_ISOLATED][s] = isolated_us;
        isolated[std::string(to_string(static_cast<Stage>(s)))] = isolated_us;

        DecodeLaunch ablated = launch;
        ablated.removed_stage = s;
        TimedRuns runs = time_kernel(ablated, 1, repeats, progress, "stage_removed");
        const double saved_us = m.latency_median_us - median(runs.latencies_us);
        m.stage_cost_us[TP_COST_REMOVED][s] = per_step ? saved_us : saved_us * per_tile_factor;
        removed[std::string(to_string(static_cast<Stage>(s)))] = runs.latencies_us;

        DecodeLaunch doubled_launch = launch;
        doubled_launch.doubled_stage = s;
        TimedRuns doubled_runs = time_kernel(doubled_launch, 1, repeats, progress, "stage_doubled");
        const double added_us = median(doubled_runs.latencies_us) - m.latency_median_us;
        m.stage_cost_us[TP_COST_DOUBLED][s] = per_step ? added_us : added_us * per_tile_factor;
        doubled[std::string(to_string(static_cast<Stage>(s)))] = doubled_runs.latencies_us;
      }
      m.samples["doubled_latency_us"] = doubled;
      m.samples["isolated_us"] = isolated;  // per tile per worker (q_quant/combine: per step)
      m.samples["removed_latency_us"] = removed;
    }

    // ---- the kernel check (the float64 reference of the kernel's own arithmetic over the
    // stored cache) and the gate on the same rows (against attention at full precision on
    // these inputs); the gate computes the stored reference, the check compares with it ----
    if (progress.poll("reference", 0.0)) throw Cancelled{};
    start = std::chrono::steady_clock::now();
    const std::vector<int> verified = requests_to_verify(problem);
    const std::size_t request_elems = static_cast<std::size_t>(op.q_heads) * op.head_dim;
    std::vector<float> checked;
    checked.reserve(verified.size() * request_elems);
    for (int b : verified) {
      checked.insert(checked.end(), m.out.begin() + b * request_elems, m.out.begin() + (b + 1) * request_elems);
    }
    const DecodeProblem full_precision =
        numerics::make_full_precision_requests(op, options.seed, options.keys, verified, &options.key_model);
    std::vector<double> reference;
    m.gate = numerics::case_gate(problem, verified, checked, full_precision, options.fnuz ? nullptr : &reference);
    if (options.fnuz) reference = numerics::reference_decode(problem, verified, numerics::QQuantization::e4m3_fnuz);
    m.gate.rows_total = op.batch * op.kv_heads;
    m.reference_ms = elapsed_us(start) / 1000;
    m.error = numerics::compare(checked, reference);
    m.verified_requests = static_cast<int>(verified.size());
    m.samples["verified_requests"] = verified;
    m.tolerance = numerics::default_tolerance(op);
    if (progress.next_unit("save")) throw Cancelled{};

    if (!options.save_tensors_dir.empty()) {
      try {
        numerics::save_problem_npy(problem, m.out, options.save_tensors_dir);
      } catch (const std::exception& e) {
        m.status = TP_ERR_RUNTIME;
        m.message = std::string("save_tensors_dir: ") + e.what();
        return m;
      }
    }
    m.samples["read_bandwidth_gbps"] = m.read_bandwidth_gbps;
    if (!(m.error.rel_l2 <= m.tolerance)) {
      m.status = TP_ERR_WRONG_RESULT;
      m.message = "output rel_l2 " + std::to_string(m.error.rel_l2) + " exceeds tolerance " +
                  std::to_string(m.tolerance) + (m.error.all_finite ? "" : " (non-finite values in the output)");
    } else {
      m.status = TP_OK;
      m.message = "ok: rel_l2 " + std::to_string(m.error.rel_l2) + " <= " + std::to_string(m.tolerance);
    }
  } catch (const Cancelled&) {
    m.status = TP_ERR_CANCELLED;
    m.message = "cancelled during " + progress.phase();
  }
  return m;
}

}  // namespace tilepath::cpu
