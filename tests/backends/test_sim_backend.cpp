// The sim backend plugin, loaded the way a host loads it: dlopen + tilepath_backend_entry.
// (Deliberately not through core/plugin_host, so this tests the plugin alone.)

#include <dlfcn.h>

#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/abi/tilepath_backend.h"
#include "core/operating_point.h"
#include "core/perf/gpu_model.h"
#include "tests/stage_cost_lookup.h"

namespace {

using tilepath::testing::stage_cost;

const std::string kPluginFile = std::string(TILEPATH_PLUGIN_DIR) + "/libtilepath_backend_sim.so";
const std::string kModelsDir = std::string(TILEPATH_SOURCE_DIR) + "/models";

class SimBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(kPluginFile)) << kPluginFile << " missing: build target tilepath_backend_sim";
    handle_ = dlopen(kPluginFile.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    entry_ = reinterpret_cast<tp_backend_entry_fn>(dlsym(handle_, TILEPATH_BACKEND_ENTRY_SYMBOL));
    ASSERT_NE(entry_, nullptr) << dlerror();
    api_ = entry_(TILEPATH_ABI_MAJOR, TILEPATH_ABI_MINOR);
    ASSERT_NE(api_, nullptr);
    char error[256] = "unset";
    ASSERT_EQ(api_->init(error, sizeof(error)), 0) << error;
  }
  void TearDown() override {
    if (api_ != nullptr) api_->shutdown();
    if (handle_ != nullptr) dlclose(handle_);
  }

  // Index of the device that models `id` ("h200"), by its device name.
  int device_of(const std::string& id) const {
    const auto model = tilepath::perf::load_gpu_model(id, kModelsDir);
    for (int d = 0; d < api_->device_count(); ++d) {
      tp_device_info info{};
      info.struct_size = sizeof(info);
      if (api_->device_info(d, &info) == 0 && info.name == model.name + " (model)") return d;
    }
    return -1;
  }

  // A result as the host prepares it: zeroed, struct_size set, doubles NaN.
  static tp_result fresh_result() {
    tp_result r;
    std::memset(&r, 0, sizeof(r));
    r.struct_size = sizeof(r);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    r.latency_us = r.tile_interval_us = r.floor_fraction = r.rel_l2_error = nan;
    return r;
  }

  static tp_run_options options() {
    tp_run_options o{};
    o.struct_size = sizeof(o);
    o.warmup = 0;
    o.repeats = 1;
    return o;
  }

  void* handle_ = nullptr;
  tp_backend_entry_fn entry_ = nullptr;
  const tp_backend_api* api_ = nullptr;
};

tilepath::OperatingPoint k8v8(tilepath::KPath path, tilepath::TransformMode mode) {
  tilepath::OperatingPoint op;
  op.batch = 64;
  op.context = 4096;
  op.kv = tilepath::KvDtype::k8v8;
  op.k_path = path;
  op.mode = mode;
  return op;
}

struct ProgressLog {
  std::vector<double> fractions;
  int cancel_at_call = -1;  // return nonzero on this call
};
int record_progress(void* user, double fraction, const char* /*phase*/) {
  auto* log = static_cast<ProgressLog*>(user);
  log->fractions.push_back(fraction);
  return static_cast<int>(log->fractions.size()) - 1 == log->cancel_at_call ? 1 : 0;
}

}  // namespace

TEST_F(SimBackend, NegotiatesTheAbiMajor) {
  EXPECT_EQ(std::string(api_->name), "sim");
  EXPECT_EQ(api_->abi_major, static_cast<uint32_t>(TILEPATH_ABI_MAJOR));
  EXPECT_GE(api_->struct_size, sizeof(tp_backend_api));
  EXPECT_EQ(entry_(TILEPATH_ABI_MAJOR + 1, 0), nullptr);
}

TEST_F(SimBackend, OneDevicePerGpuModelFile) {
  const auto models = tilepath::perf::load_gpu_models(kModelsDir);
  ASSERT_EQ(api_->device_count(), static_cast<int32_t>(models.size())) << api_->no_device_reason();
  EXPECT_STREQ(api_->no_device_reason(), "");
  for (int d = 0; d < api_->device_count(); ++d) {
    tp_device_info info{};
    info.struct_size = sizeof(info);
    ASSERT_EQ(api_->device_info(d, &info), 0);
    const auto& m = models[d];
    EXPECT_EQ(std::string(info.name), m.name + " (model)");
    EXPECT_EQ(std::string(info.arch), m.arch);
    EXPECT_EQ(info.sm_count, m.sm_count);
    EXPECT_DOUBLE_EQ(info.bandwidth_gbps, m.read_bandwidth_gbps);
    EXPECT_EQ(std::string(info.uid), "model:" + m.id);
  }
  // A host of ABI 2.5 passes the struct without uid: served, nothing written past it.
  tp_device_info older{};
  older.struct_size = offsetof(tp_device_info, uid);
  ASSERT_EQ(api_->device_info(0, &older), 0);
  EXPECT_EQ(older.struct_size, offsetof(tp_device_info, uid));
  EXPECT_STREQ(older.uid, "");
  tp_device_info info{};
  info.struct_size = sizeof(info);
  EXPECT_NE(api_->device_info(api_->device_count(), &info), 0);
}

TEST_F(SimBackend, SupportsReportsTheUnsupportedReason) {
  const auto fp8_qk = k8v8(tilepath::KPath::fp8_qk, tilepath::TransformMode::full);
  char why[512];

  const int a100 = device_of("a100_sxm");
  ASSERT_GE(a100, 0);
  tp_case c = tilepath::to_tp_case(fp8_qk);
  EXPECT_EQ(api_->supports(a100, &c, why, sizeof(why)), 0);
  EXPECT_NE(std::string(why).find("FP8"), std::string::npos) << why;

  // gpu_model overrides the device: the same device index now models MI300X, whose HIP
  // kernels run fp8_qk on the FNUZ MFMA.
  c = tilepath::to_tp_case(fp8_qk, "mi300x");
  EXPECT_EQ(api_->supports(a100, &c, why, sizeof(why)), 1) << why;

  c = tilepath::to_tp_case(k8v8(tilepath::KPath::transform, tilepath::TransformMode::full), "h200");
  EXPECT_EQ(api_->supports(a100, &c, why, sizeof(why)), 1) << why;

  c = tilepath::to_tp_case(fp8_qk, "h900");
  EXPECT_EQ(api_->supports(0, &c, why, sizeof(why)), 0);
  EXPECT_NE(std::string(why).find("h200"), std::string::npos) << why;
}

TEST_F(SimBackend, RunsACaseAndFillsTheResult) {
  const int h200 = device_of("h200");
  ASSERT_GE(h200, 0);
  const auto op = k8v8(tilepath::KPath::transform, tilepath::TransformMode::full);
  const tp_case c = tilepath::to_tp_case(op);
  ProgressLog log;
  tp_run_options o = options();
  o.progress = record_progress;
  o.progress_user = &log;
  tp_result r = fresh_result();

  ASSERT_EQ(api_->run_case(h200, &c, &o, &r), TP_OK) << r.message;
  EXPECT_EQ(r.status, TP_OK);
  EXPECT_GT(r.latency_us, 0);
  EXPECT_GT(r.tile_interval_us, 0);
  EXPECT_LT(r.tile_interval_us, r.latency_us);
  EXPECT_EQ(r.tile_tokens, 64);
  EXPECT_DOUBLE_EQ(r.bytes_moved, op.bytes_moved());
  EXPECT_DOUBLE_EQ(r.read_bandwidth_gbps, 4550);
  EXPECT_GT(r.floor_fraction, 0);
  EXPECT_LE(r.floor_fraction, 1);
  EXPECT_NEAR(r.floor_fraction, r.bytes_moved / (r.read_bandwidth_gbps * 1e3) / r.latency_us, 1e-12);
  // Stage costs: only the model row is filled, and only for stages the variant has.
  for (int s = 0; s < TP_STAGE_COUNT; ++s) {
    EXPECT_TRUE(std::isnan(stage_cost(r, TP_COST_ISOLATED, s)));
    EXPECT_TRUE(std::isnan(stage_cost(r, TP_COST_REMOVED, s)));
    EXPECT_TRUE(std::isnan(stage_cost(r, TP_COST_DOUBLED, s)));
  }
  for (int s : {TP_STAGE_K_LOAD, TP_STAGE_K_PREP, TP_STAGE_QK, TP_STAGE_SOFTMAX, TP_STAGE_V_LOAD, TP_STAGE_V_PREP,
                TP_STAGE_PV, TP_STAGE_ACCUM}) {
    EXPECT_GT(stage_cost(r, TP_COST_MODEL, s), 0) << s;
    EXPECT_LE(stage_cost(r, TP_COST_MODEL, s), r.tile_interval_us) << s;
  }
  EXPECT_TRUE(std::isnan(stage_cost(r, TP_COST_MODEL, TP_STAGE_Q_QUANT)));
  EXPECT_EQ(std::string(r.kernel_name), "sim:h200:" + op.variant_label());
  EXPECT_GE(r.splits, 1);
  EXPECT_EQ(r.grid[0] * r.grid[1] * r.grid[2], op.batch * op.kv_heads * r.splits);
  EXPECT_GT(r.block[0], 0);
  EXPECT_EQ(r.passed, 1);
  EXPECT_TRUE(std::isnan(r.rel_l2_error));
  ASSERT_FALSE(log.fractions.empty());
  EXPECT_DOUBLE_EQ(log.fractions.back(), 1.0);
  ASSERT_GT(r.metric_count, 0);
  ASSERT_NE(r.metrics, nullptr);
  ASSERT_EQ(r.artifact_count, 1);
  EXPECT_GT(r.artifacts[0].size, 0u);

  api_->release_result(&r);
  EXPECT_EQ(r.metrics, nullptr);
  EXPECT_EQ(r.artifact_count, 0);
  api_->release_result(&r);  // idempotent
}

TEST_F(SimBackend, GpuModelSelectsTheModelledGpu) {
  const auto op = k8v8(tilepath::KPath::transform, tilepath::TransformMode::full);
  tp_result on_h200 = fresh_result();
  tp_result on_a100 = fresh_result();
  const tp_case h200 = tilepath::to_tp_case(op, "h200");
  const tp_case a100 = tilepath::to_tp_case(op, "a100_sxm");
  const tp_run_options o = options();
  ASSERT_EQ(api_->run_case(0, &h200, &o, &on_h200), TP_OK) << on_h200.message;
  ASSERT_EQ(api_->run_case(0, &a100, &o, &on_a100), TP_OK) << on_a100.message;
  EXPECT_EQ(std::string(on_a100.kernel_name).rfind("sim:a100_sxm:", 0), 0u) << on_a100.kernel_name;
  // A100 streams at well under half of H200's bandwidth: a memory-bound case is slower.
  EXPECT_GT(on_a100.latency_us, 2 * on_h200.latency_us);
  api_->release_result(&on_h200);
  api_->release_result(&on_a100);
}

TEST_F(SimBackend, UnsupportedAndInvalidCasesSayWhy) {
  const tp_run_options o = options();
  tp_result r = fresh_result();
  const tp_case unsupported =
      tilepath::to_tp_case(k8v8(tilepath::KPath::fp8_qk, tilepath::TransformMode::full), "a100_sxm");
  EXPECT_EQ(api_->run_case(0, &unsupported, &o, &r), TP_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(r.message).find("e4m3_e4m3"), std::string::npos) << r.message;

  r = fresh_result();
  auto bad = k8v8(tilepath::KPath::transform, tilepath::TransformMode::full);
  bad.batch = 0;
  const tp_case invalid = tilepath::to_tp_case(bad, "h200");
  EXPECT_EQ(api_->run_case(0, &invalid, &o, &r), TP_ERR_INVALID);
  EXPECT_NE(std::string(r.message).find("batch"), std::string::npos) << r.message;
  char why[256];
  EXPECT_EQ(api_->supports(0, &invalid, why, sizeof(why)), 0);
  EXPECT_NE(std::string(why).find("batch"), std::string::npos) << why;
}

TEST_F(SimBackend, HonoursTheCancelFlagAndTheProgressCallback) {
  const tp_case c = tilepath::to_tp_case(k8v8(tilepath::KPath::transform, tilepath::TransformMode::full), "h200");
  volatile int32_t cancel = 1;
  tp_run_options o = options();
  o.cancel = &cancel;
  tp_result r = fresh_result();
  EXPECT_EQ(api_->run_case(0, &c, &o, &r), TP_ERR_CANCELLED);
  EXPECT_EQ(r.metrics, nullptr);

  ProgressLog log;
  log.cancel_at_call = 0;
  o = options();
  o.progress = record_progress;
  o.progress_user = &log;
  r = fresh_result();
  EXPECT_EQ(api_->run_case(0, &c, &o, &r), TP_ERR_CANCELLED);
  EXPECT_EQ(log.fractions.size(), 1u);
}

TEST_F(SimBackend, MissingModelsGiveZeroDevicesAndAReason) {
  api_->shutdown();
  const char* old = std::getenv("TILEPATH_MODELS_DIR");
  const std::string saved = old ? old : "";
  setenv("TILEPATH_MODELS_DIR", "/nonexistent/tilepath-models", 1);
  char error[256];
  EXPECT_EQ(api_->init(error, sizeof(error)), 0) << "a missing models dir is not an init failure";
  EXPECT_EQ(api_->device_count(), 0);
  EXPECT_NE(std::string(api_->no_device_reason()).find("TILEPATH_MODELS_DIR"), std::string::npos)
      << api_->no_device_reason();
  const tp_case c = tilepath::to_tp_case(k8v8(tilepath::KPath::transform, tilepath::TransformMode::full));
  tp_result r = fresh_result();
  const tp_run_options o = options();
  EXPECT_EQ(api_->run_case(0, &c, &o, &r), TP_ERR_INVALID);
  EXPECT_NE(std::string(r.message).find("no GPU models"), std::string::npos) << r.message;
  if (old) {
    setenv("TILEPATH_MODELS_DIR", saved.c_str(), 1);
  } else {
    unsetenv("TILEPATH_MODELS_DIR");
  }
  api_->shutdown();
  ASSERT_EQ(api_->init(error, sizeof(error)), 0);
  EXPECT_GT(api_->device_count(), 0);
}

// wgmma is modelled where the GPU's model lists it (Hopper: h200), with fp8_qk's QK at the
// FP8 dense rate where mma_sync's e4m3 MMA (lowered to F16 HMMA) runs at the 16-bit rate;
// elsewhere (A100: sm_80; MI300X: MFMA) the case is refused naming the field.
TEST_F(SimBackend, WgmmaIsModelledOnHopperAndRefusedElsewhere) {
  auto op = k8v8(tilepath::KPath::fp8_qk, tilepath::TransformMode::full);
  const tp_run_options o = options();
  char why[512];

  tp_result sync = fresh_result();
  const tp_case sync_case = tilepath::to_tp_case(op, "h200");
  ASSERT_EQ(api_->run_case(0, &sync_case, &o, &sync), TP_OK) << sync.message;
  op.mma = tilepath::Mma::wgmma;
  const tp_case wgmma_case = tilepath::to_tp_case(op, "h200");
  EXPECT_EQ(api_->supports(0, &wgmma_case, why, sizeof(why)), 1) << why;
  tp_result wgmma = fresh_result();
  ASSERT_EQ(api_->run_case(0, &wgmma_case, &o, &wgmma), TP_OK) << wgmma.message;
  EXPECT_EQ(std::string(wgmma.kernel_name), "sim:h200:" + op.variant_label());
  EXPECT_NE(std::string(wgmma.kernel_name).find("/wgmma"), std::string::npos);
  const auto h200 = tilepath::perf::load_gpu_model("h200", kModelsDir);
  const double rate_ratio = h200.path("e4m3_e4m3")->dense_tflops / h200.path("bf16_bf16")->dense_tflops;
  ASSERT_GT(rate_ratio, 1.0);
  const double qk_sync = stage_cost(sync, TP_COST_MODEL, TP_STAGE_QK);
  const double qk_wgmma = stage_cost(wgmma, TP_COST_MODEL, TP_STAGE_QK);
  EXPECT_NEAR(qk_sync / qk_wgmma, rate_ratio, 1e-9 * rate_ratio);
  // The latency also follows each family's own launch plan: the wgmma kernels hold one kv
  // head per CTA where mma.sync runs two at this shape.
  EXPECT_EQ(int64_t(wgmma.grid[0]) * wgmma.grid[1] * wgmma.grid[2], int64_t(op.batch) * op.kv_heads * wgmma.splits);
  EXPECT_EQ(wgmma.block[0], 160);  // a consumer warpgroup and a producer warp
  // At 1-token pages (which TMA boxes do not tile) the cp.async ring's CTA: two producer warps.
  auto page1 = op;
  page1.page_size = 1;
  const tp_case ring_case = tilepath::to_tp_case(page1, "h200");
  tp_result ring = fresh_result();
  ASSERT_EQ(api_->run_case(0, &ring_case, &o, &ring), TP_OK) << ring.message;
  EXPECT_EQ(ring.block[0], 192);
  api_->release_result(&ring);
  // A stage without an FP8 MMA costs the same on either family.
  EXPECT_DOUBLE_EQ(stage_cost(wgmma, TP_COST_MODEL, TP_STAGE_SOFTMAX),
                   stage_cost(sync, TP_COST_MODEL, TP_STAGE_SOFTMAX));
  api_->release_result(&sync);
  api_->release_result(&wgmma);

  auto transform = k8v8(tilepath::KPath::transform, tilepath::TransformMode::full);
  transform.mma = tilepath::Mma::wgmma;
  for (const char* gpu : {"a100_sxm", "mi300x"}) {
    SCOPED_TRACE(gpu);
    const tp_case refused = tilepath::to_tp_case(transform, gpu);
    EXPECT_EQ(api_->supports(0, &refused, why, sizeof(why)), 0);
    EXPECT_EQ(std::string(why), std::string("mma: ") + gpu +
                                    " has no wgmma (its model's matrix_instructions say why); allowed here: mma_sync");
    tp_result r = fresh_result();
    EXPECT_EQ(api_->run_case(0, &refused, &o, &r), TP_ERR_UNSUPPORTED);
    EXPECT_EQ(std::string(r.message).rfind("mma: ", 0), 0u) << r.message;
    // The same case on mma_sync runs there.
    transform.mma = tilepath::Mma::mma_sync;
    const tp_case accepted = tilepath::to_tp_case(transform, gpu);
    EXPECT_EQ(api_->supports(0, &accepted, why, sizeof(why)), 1) << why;
    transform.mma = tilepath::Mma::wgmma;
  }

  // A host of ABI 2.4 sends a case without mma: it means mma_sync, accepted on the A100.
  tp_case older = tilepath::to_tp_case(transform, "a100_sxm");
  older.struct_size = static_cast<uint32_t>(offsetof(tp_case, mma));
  EXPECT_EQ(api_->supports(0, &older, why, sizeof(why)), 1) << why;
}
