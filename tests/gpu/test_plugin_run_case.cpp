// The cuda plugin's run_case end to end on the device: correctness against the
// float64 reference, timings, tile interval, stage ablations, the read-bandwidth
// ceiling, kernel metadata (cubin hash, registers, occupancy), sampled checking
// of large (tiled) cases, --save-tensors, and refusals.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/plugin_host.h"
#include "cuda_test_support.h"
#include "tests/stage_cost_lookup.h"

using namespace tilepath;
namespace fs = std::filesystem;

namespace {

class CudaPluginRun : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = cuda::test::no_cuda_device_reason();
    if (!reason.empty()) GTEST_SKIP() << "no CUDA device: " << reason;
    backend_ = host_.load_file(cuda::test::cuda_plugin_file());
    ASSERT_NE(backend_, nullptr) << (host_.problems().empty() ? "" : host_.problems().front().reason);
    ASSERT_FALSE(backend_->devices().empty()) << backend_->no_device_reason();
  }

  tp_run_options options(std::uint32_t ablations) const {
    tp_run_options o{};
    o.struct_size = sizeof(o);
    o.warmup = 2;
    o.repeats = 20;
    o.ablations = ablations;
    return o;
  }

  PluginHost host_;
  const Backend* backend_ = nullptr;
};

OperatingPoint shape(int batch, int context, KvDtype kv) {
  OperatingPoint op;
  op.batch = batch;
  op.context = context;
  op.kv = kv;
  op.k_path = default_k_path(kv);
  op.mode = default_mode(kv, op.k_path);
  return op;
}

bool is_hex64(const char* s) {
  const std::string t(s);
  return t.size() == 64 && t.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// A named metric of r; NaN when absent.
double metric(const tp_result& r, const std::string& name) {
  for (int i = 0; i < r.metric_count; ++i)
    if (name == r.metrics[i].name) return r.metrics[i].value;
  return NAN;
}

}  // namespace

TEST_F(CudaPluginRun, DeviceInfoDescribesAHopperGpu) {
  const DeviceInfo& d = backend_->devices().front();
  EXPECT_FALSE(d.name.empty());
  EXPECT_EQ(d.arch.rfind("sm_", 0), 0u) << d.arch;
  EXPECT_GT(d.sm_count, 0);
  EXPECT_GT(d.memory_bytes, 0);
  EXPECT_GT(d.l2_bytes, 0);
  EXPECT_GT(d.bandwidth_gbps, 0);
}

TEST_F(CudaPluginRun, ColdCaseFillsEveryMeasuredField) {
  for (KvDtype kv : {KvDtype::k8v8, KvDtype::k16v16}) {
    OperatingPoint op = shape(4, 4096, kv);
    op.cache = CacheState::hbm_cold;
    tp_result r{};
    const int status = backend_->run(0, op, options(TP_ABLATE_STAGE_COSTS | TP_ABLATE_TILE_INTERVAL), r);
    ASSERT_EQ(status, TP_OK) << r.message;
    EXPECT_EQ(r.passed, 1);
    EXPECT_LE(r.rel_l2_error, r.tolerance);
    EXPECT_GT(r.latency_us, 0);
    EXPECT_LE(r.latency_min_us, r.latency_us);
    EXPECT_GE(r.latency_max_us, r.latency_us);
    EXPECT_EQ(r.repeats, 20);
    EXPECT_TRUE(std::isfinite(r.tile_interval_us)) << "two contexts with different tile counts were timed";
    EXPECT_GT(r.tile_tokens, 0);
    EXPECT_DOUBLE_EQ(r.bytes_moved, op.bytes_moved());
    EXPECT_GT(r.read_bandwidth_gbps, 0);
    EXPECT_NEAR(r.floor_fraction, r.bytes_moved / (r.read_bandwidth_gbps * 1e9) / (r.latency_us * 1e-6), 1e-9);
    EXPECT_STRNE(r.kernel_name, "");
    EXPECT_TRUE(is_hex64(r.cubin_sha256)) << r.cubin_sha256;
    EXPECT_GT(r.regs_per_thread, 0);
    EXPECT_GE(r.smem_static_bytes, 0);
    EXPECT_GE(r.smem_dynamic_bytes, 0);
    EXPECT_GT(r.occupancy_theoretical, 0);
    EXPECT_LE(r.occupancy_theoretical, 1);
    EXPECT_GT(r.grid[0] * r.grid[1] * r.grid[2], 0);
    EXPECT_GT(r.block[0] * r.block[1] * r.block[2], 0);
    EXPECT_GE(r.splits, 1);
    EXPECT_TRUE(tilepath::testing::has_method(r, TP_COST_REMOVED) || tilepath::testing::has_method(r, TP_COST_DOUBLED))
        << "ablations ran";
    EXPECT_GT(r.metric_count, 0);
    // The read kernel over the same bytes: no faster than the bandwidth floor, no slower
    // than the attention kernel that does more with them.
    const double stream_us = metric(r, "stream_same_bytes_us");
    EXPECT_GE(stream_us, 0.9 * r.bytes_moved / (r.read_bandwidth_gbps * 1e3));
    EXPECT_LE(stream_us, r.latency_us);
    EXPECT_NEAR(metric(r, "stream_same_bytes_fraction"), stream_us / r.latency_us, 1e-9);
    ASSERT_GE(r.artifact_count, 2);
    EXPECT_GT(r.artifacts[0].size, 0u);
    backend_->release(r);
    EXPECT_EQ(r.metric_count, 0);
  }
}

TEST_F(CudaPluginRun, LargeCaseIsTiledAndCheckedOnSampledRows) {
  OperatingPoint op = shape(16, 32768, KvDtype::k8v8);  // 4 GiB cache: tiled from a random pool
  op.cache = CacheState::l2_warm;
  tp_result r{};
  const int status = backend_->run(0, op, options(0), r);
  ASSERT_EQ(status, TP_OK) << r.message;
  EXPECT_NE(std::string(r.message).find("sampled"), std::string::npos) << r.message;
  EXPECT_LE(r.rel_l2_error, r.tolerance);
  // The gate compares the rows the kernel check sampled, against full precision.
  EXPECT_EQ(r.check_rows_total, 16 * op.kv_heads);
  EXPECT_LT(r.check_rows_checked, r.check_rows_total);
  EXPECT_GT(r.check_rows_checked, 3) << "rows are sampled up to a float64 work budget, not three";
  EXPECT_EQ(r.gate_rows_checked, r.check_rows_checked);
  EXPECT_EQ(r.gate_rows_total, r.check_rows_total);
  EXPECT_GT(r.gate_rel_l2.worst, r.rel_l2_error);
  EXPECT_LT(r.gate_rel_l2.worst, 0.1) << "Gaussian keys pass the gate in K8/V8";
  backend_->release(r);
}

// Two verdicts: the kernel check (its own arithmetic) and the gate on the case's own
// inputs against full precision, on every row of a small case.
TEST_F(CudaPluginRun, GateOnTheCasesOwnInputsComesWithTheKernelCheck) {
  OperatingPoint op = shape(3, 700, KvDtype::k8v8);
  op.k_path = KPath::fp8_qk;
  op.mode = default_mode(op.kv, op.k_path);
  tp_result r{};
  ASSERT_EQ(backend_->run(0, op, options(0), r), TP_OK) << r.message;
  EXPECT_STREQ(r.key_distribution, "gaussian");
  EXPECT_EQ(r.check_rows_checked, 3 * op.kv_heads);
  EXPECT_EQ(r.gate_rows_checked, r.check_rows_checked);
  // fp8_qk's check rounds Q in its reference too; against the BF16 query it is further off.
  EXPECT_GT(r.gate_rel_l2.worst, 5 * r.rel_l2_error);
  EXPECT_GT(r.gate_kl.worst, 0.0);
  backend_->release(r);

  // Qwen-like keys: the kernel still computes its arithmetic; the gate fails it.
  tp_run_options o = options(0);
  o.key_distribution = "qwen_bias";
  ASSERT_EQ(backend_->run(0, op, o, r), TP_OK) << r.message;
  EXPECT_STREQ(r.key_distribution, "qwen_bias");
  EXPECT_LE(r.rel_l2_error, r.tolerance);
  EXPECT_GT(r.gate_kl.worst, 0.005) << "plain K8 loses the residual under a large bias";
  backend_->release(r);

  o.key_distribution = "uniform";
  EXPECT_EQ(backend_->run(0, op, o, r), TP_ERR_INVALID);
  EXPECT_NE(std::string(r.message).find("key_distribution"), std::string::npos) << r.message;
  backend_->release(r);
}

TEST_F(CudaPluginRun, SaveTensorsWritesTheInputsAndOutput) {
  const fs::path dir = fs::temp_directory_path() / ("tilepath_cuda_tensors_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  OperatingPoint op = shape(2, 100, KvDtype::k8v8);
  tp_run_options o = options(0);
  const std::string dir_text = dir.string();
  o.save_tensors_dir = dir_text.c_str();
  tp_result r{};
  ASSERT_EQ(backend_->run(0, op, o, r), TP_OK) << r.message;
  backend_->release(r);
  EXPECT_TRUE(fs::exists(dir / "manifest.json"));
  int npy = 0;
  for (const auto& entry : fs::directory_iterator(dir)) npy += entry.path().extension() == ".npy";
  EXPECT_GE(npy, 5) << "q, k pages, v pages, page table, lengths, scales, output";
  fs::remove_all(dir);
}

// Qwen-like keys: plain K8 loses the residual under the bias and fails the gate; a
// post-RoPE prebias cache (the residual quantized, the exact bias added back by the
// k_bias stage) passes its kernel check in both K paths and modes, and the gate with the
// transform path. fp8_qk's E4M3 Q times the large bias still moves the scores: better
// than plain, not a pass (docs/gate.md, the cpu kernels agree). Plain and prebias see the
// same keys (one seed per pair): with a fresh seed each, fp8_qk's KL ratio varies with the
// keys drawn (0.56 of plain in one run).
TEST_F(CudaPluginRun, PrebiasPassesTheGateOnQwenLikeKeysWherePlainFails) {
  tp_run_options o = options(0);
  o.key_distribution = "qwen_bias";
  o.seed = (std::uint64_t(std::random_device{}()) << 32) | std::random_device{}() | 1u;  // 0 asks for a fresh one
  SCOPED_TRACE("seed " + std::to_string(o.seed));
  const double kl_threshold = 0.005;  // numerics::GateThresholds{}.kl
  for (KPath path : {KPath::transform, KPath::fp8_qk}) {
    for (TransformMode mode : {TransformMode::full, TransformMode::k_only}) {
      OperatingPoint op = shape(3, 700, KvDtype::k8v8);
      op.k_path = path;
      op.mode = mode;
      tp_result r{};
      ASSERT_EQ(backend_->run(0, op, o, r), TP_OK) << r.message;
      const double plain_kl = r.gate_kl.worst;
      backend_->release(r);
      op.k_repr = KRepr::prebias;
      ASSERT_EQ(backend_->run(0, op, o, r), TP_OK) << op.variant_label() << ": " << r.message;
      EXPECT_NE(std::string(r.kernel_name).find("_prebias"), std::string::npos) << r.kernel_name;
      EXPECT_EQ(r.passed, 1) << op.variant_label() << ": the kernel check, rel_l2 " << r.rel_l2_error;
      EXPECT_EQ(r.gate_rows_checked, r.gate_rows_total);
      EXPECT_GT(plain_kl, kl_threshold) << op.variant_label();
      if (path == KPath::transform) {
        EXPECT_LT(r.gate_kl.worst, kl_threshold) << op.variant_label();
        EXPECT_LT(r.gate_rel_l2.worst, 0.1) << op.variant_label();
      } else {
        EXPECT_LT(r.gate_kl.worst, plain_kl) << op.variant_label();
      }
      backend_->release(r);
    }
  }
}

// A large prebias case is tiled with every token at its pool position, so its sampled
// rows pass the gate too; its k_bias stage is measured by its own ablations.
TEST_F(CudaPluginRun, LargePrebiasCaseIsTiledAndMeasuresItsKBiasStage) {
  OperatingPoint op = shape(16, 4096, KvDtype::k8v8);
  op.k_path = KPath::transform;
  op.mode = TransformMode::k_only;
  op.k_repr = KRepr::prebias;
  tp_run_options o = options(TP_ABLATE_STAGE_COSTS);
  o.key_distribution = "qwen_bias";
  tp_result r{};
  ASSERT_EQ(backend_->run(0, op, o, r), TP_OK) << r.message;
  EXPECT_NE(std::string(r.message).find("sampled"), std::string::npos) << r.message;
  EXPECT_EQ(r.passed, 1) << r.message;
  EXPECT_LT(r.gate_kl.worst, 0.005);
  EXPECT_TRUE(std::isfinite(tilepath::testing::stage_cost(r, TP_COST_REMOVED, TP_STAGE_K_BIAS)));
  EXPECT_TRUE(std::isfinite(tilepath::testing::stage_cost(r, TP_COST_DOUBLED, TP_STAGE_K_BIAS)));
  EXPECT_TRUE(std::isnan(tilepath::testing::stage_cost(r, TP_COST_REMOVED, TP_STAGE_QK)))
      << "no qk ablation kernel is compiled for prebias: unknown, not borrowed from the plain kernel";
  backend_->release(r);
}

TEST_F(CudaPluginRun, PrebiasOutsideItsKernelsIsRefusedWithTheReason) {
  OperatingPoint op = shape(3, 700, KvDtype::k8v8);
  op.k_repr = KRepr::prebias;
  op.head_dim = 64;
  std::string why = backend_->unsupported_reason(0, op);
  EXPECT_NE(why.find("k_repr"), std::string::npos) << why;
  EXPECT_NE(why.find("head_dim 128"), std::string::npos) << why;
  op.head_dim = 128;
  op.mode = TransformMode::separate_kv;
  why = backend_->unsupported_reason(0, op);
  EXPECT_NE(why.find("k_repr"), std::string::npos) << why;
  tp_result r{};
  EXPECT_EQ(backend_->run(0, op, options(0), r), TP_ERR_UNSUPPORTED);
  backend_->release(r);
}

// A wgmma case end to end: the wgmma kernel ran (its name, and QGMMA in its SASS where
// cuobjdump is on the machine) and the tile interval is measured. Its ring is measured only
// whole (load_only), so k_load and v_load stay unknown, not 0; the compute stages this variant
// runs are measured alone in the real kernel's CTA (isolated ablations), and each side's tile
// interval whole (load_only, compute_only).
TEST_F(CudaPluginRun, WgmmaCaseMeasuresItsComputeStagesAndLeavesItsLoadsUnknown) {
  OperatingPoint op = shape(16, 8192, KvDtype::k8v8);
  op.k_path = KPath::fp8_qk;
  op.mode = TransformMode::k_only;
  op.mma = Mma::wgmma;
  op.cache = CacheState::hbm_cold;
  tp_result r{};
  ASSERT_EQ(backend_->run(0, op, options(TP_ABLATE_STAGE_COSTS | TP_ABLATE_TILE_INTERVAL), r), TP_OK) << r.message;
  EXPECT_EQ(r.passed, 1);
  EXPECT_NE(std::string(r.kernel_name).find("_wgmma"), std::string::npos) << r.kernel_name;
  EXPECT_EQ(r.tile_tokens, 64);
  EXPECT_EQ(r.block[0], 160);
  EXPECT_TRUE(std::isfinite(r.tile_interval_us));
  std::set<int> costed;
  for (int i = 0; i < r.stage_cost_count; ++i) {
    const tp_stage_cost& c = r.stage_costs[i];
    EXPECT_NE(c.stage, TP_STAGE_K_LOAD) << "the loads are measured only whole, as the ring";
    EXPECT_NE(c.stage, TP_STAGE_V_LOAD) << "the loads are measured only whole, as the ring";
    EXPECT_TRUE(std::isfinite(c.cost_us) && c.cost_us > 0) << "stage " << c.stage << ": " << c.cost_us;
    costed.insert(c.stage);
  }
  for (int stage : {TP_STAGE_QK, TP_STAGE_SOFTMAX, TP_STAGE_PV, TP_STAGE_ACCUM})
    EXPECT_EQ(costed.count(stage), 1u) << "stage " << stage << " of fp8_qk/k_only has no measured cost";
  EXPECT_GT(metric(r, "tile_interval_load_only_us"), 0);
  EXPECT_GT(metric(r, "tile_interval_compute_only_us"), 0);
  const double qgmma = metric(r, "sass_QGMMA");
  if (!std::isnan(qgmma)) {
    EXPECT_GT(qgmma, 0);
    EXPECT_EQ(metric(r, "sass_HMMA"), 0) << "fp8_qk/k_only on wgmma issues no HMMA";
  }
  backend_->release(r);
  // What has no wgmma kernel is refused, naming the field.
  op.mode = TransformMode::separate_kv;
  EXPECT_NE(backend_->unsupported_reason(0, op).find("mma"), std::string::npos);
}

// A wgmma case at 1-token pages, which no TMA box tiles, end to end: the kernel whose producer
// gathers the ring with cp.async ran and passed its check; its ring is measured whole
// (load_only), and with no compute_only or isolated kernels for this ring the compute side's
// interval is absent, not 0.
TEST_F(CudaPluginRun, WgmmaAtOneTokenPagesRunsTheCpAsyncRing) {
  OperatingPoint op = shape(16, 8192, KvDtype::k8v8);
  op.k_path = KPath::fp8_qk;
  op.mode = TransformMode::k_only;
  op.mma = Mma::wgmma;
  op.page_size = 1;
  op.cache = CacheState::hbm_cold;
  EXPECT_EQ(backend_->unsupported_reason(0, op), "");
  tp_result r{};
  ASSERT_EQ(backend_->run(0, op, options(TP_ABLATE_STAGE_COSTS | TP_ABLATE_TILE_INTERVAL), r), TP_OK) << r.message;
  EXPECT_EQ(r.passed, 1);
  EXPECT_NE(std::string(r.kernel_name).find("_wgmma_cp_async"), std::string::npos) << r.kernel_name;
  EXPECT_EQ(r.tile_tokens, 64);
  EXPECT_TRUE(std::isfinite(r.tile_interval_us));
  EXPECT_GT(metric(r, "tile_interval_load_only_us"), 0);
  EXPECT_TRUE(std::isnan(metric(r, "tile_interval_compute_only_us")));
  const double qgmma = metric(r, "sass_QGMMA");
  if (!std::isnan(qgmma)) {
    EXPECT_GT(qgmma, 0);
  }
  backend_->release(r);
}

TEST_F(CudaPluginRun, RefusesWhatTheKernelsCannotDo) {
  OperatingPoint op = shape(2, 100, KvDtype::k8v8);
  op.rope = RopeLayout::pre_rope;
  const std::string why = backend_->unsupported_reason(0, op);
  EXPECT_NE(why.find("rope"), std::string::npos) << why;
  tp_result r{};
  EXPECT_EQ(backend_->run(0, op, options(0), r), TP_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(r.message).find("rope"), std::string::npos) << r.message;
  backend_->release(r);
}

// Cancel, through the progress callback and through the flag: run_case stops at the phase
// where it is asked, says so, and leaves the device session usable: the next case, on the
// same stream and buffers as the stopped one's queued launches, is correct.
TEST_F(CudaPluginRun, CancelStopsTheCaseAtAPhaseAndTheNextCaseRuns) {
  struct Seen {
    std::vector<std::string> phases;
    std::string stop_at;
  } seen;
  tp_run_options o = options(TP_ABLATE_STAGE_COSTS | TP_ABLATE_TILE_INTERVAL);
  o.progress = [](void* user, double, const char* phase) {
    auto* s = static_cast<Seen*>(user);
    s->phases.emplace_back(phase);
    return s->phases.back() == s->stop_at ? 1 : 0;
  };
  o.progress_user = &seen;
  OperatingPoint op = shape(4, 4096, KvDtype::k8v8);
  op.cache = CacheState::hbm_cold;

  // By the callback, after the kernel has been launched and timed: its launches are queued.
  seen.stop_at = "tile interval (partner context)";
  tp_result r{};
  EXPECT_EQ(backend_->run(0, op, o, r), TP_ERR_CANCELLED) << r.message;
  EXPECT_STREQ(r.message, "cancelled");
  ASSERT_FALSE(seen.phases.empty());
  EXPECT_EQ(seen.phases.front(), "generate inputs");
  EXPECT_EQ(seen.phases.back(), seen.stop_at) << "no phase after the one that asked to stop";
  EXPECT_EQ(std::count(seen.phases.begin(), seen.phases.end(), std::string("time full kernel")), 1);
  EXPECT_EQ(r.metric_count, 0) << "a cancelled case returns no measurements";
  backend_->release(r);

  // By the flag, set before the call: nothing past the first phase.
  const volatile std::int32_t cancel = 1;
  seen = {};
  o.cancel = &cancel;
  tp_result flagged{};
  EXPECT_EQ(backend_->run(0, op, o, flagged), TP_ERR_CANCELLED) << flagged.message;
  EXPECT_EQ(seen.phases, std::vector<std::string>{"generate inputs"});
  backend_->release(flagged);

  o.cancel = nullptr;
  seen = {};
  tp_result next{};
  ASSERT_EQ(backend_->run(0, op, o, next), TP_OK) << next.message;
  EXPECT_EQ(next.passed, 1);
  EXPECT_LE(next.rel_l2_error, next.tolerance);
  EXPECT_TRUE(std::isfinite(next.tile_interval_us));
  EXPECT_EQ(seen.phases.back(), "done");
  backend_->release(next);
}
