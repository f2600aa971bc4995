// The GPU model of the CUDA kernels (core/perf/cuda_latency_model.h): its launch plan is
// what the CUDA backend launched for every case of the bundled H200 database, its fit file
// is checked field by field, and the committed fit meets its accuracy targets on shapes it
// never saw (models/fits/h200-held-out.json).
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/perf/cost_model.h"
#include "core/perf/cuda_model_fit.h"
#include "core/store/run_store.h"

using namespace tilepath;
using namespace tilepath::perf;

namespace {

const std::string kBundled = std::string(TILEPATH_SOURCE_DIR) + "/data/h200-sweep.sqlite";
const std::string kModels = std::string(TILEPATH_SOURCE_DIR) + "/models";

std::vector<CaseSummary> bundled_cuda_cases() {
  CaseFilter filter;
  filter.backend = "cuda";
  filter.status = CaseStatus::ok;
  return RunStore::open_read_only(kBundled).cases(filter);
}

// B=64, S=4096, K8/V8 on the fp8_qk K path, k_only.
OperatingPoint headline_k8v8() {
  OperatingPoint op;
  op.batch = 64;
  op.context = 4096;
  op.kv = KvDtype::k8v8;
  op.k_path = KPath::fp8_qk;
  op.mode = TransformMode::k_only;
  return op;
}

nlohmann::json valid_fit() {
  nlohmann::json coefficients = nlohmann::json::object();
  for (const std::string& name : cuda_kernel_fit_names()) coefficients[name] = {{"value", 0.5}, {"source", "test"}};
  return {{"fitted_on", "h200"}, {"coefficients", coefficients}};
}

}  // namespace

TEST(CudaKernelPlan, IsWhatTheCudaBackendLaunchedForEveryBundledCase) {
  const std::vector<CaseSummary> cases = bundled_cuda_cases();
  ASSERT_GE(cases.size(), 1000u);
  for (const CaseSummary& c : cases) {
    const CaseRecord& r = c.record;
    SCOPED_TRACE(r.case_key);
    // The H200's SMs; the occupancy also counts the kernel's recorded registers.
    const CudaKernelPlan p = plan_cuda_kernel(r.op, 132, std::max(0, r.kernel.regs_per_thread));
    EXPECT_EQ(p.splits, r.kernel.splits);
    EXPECT_EQ(p.ctas, static_cast<long long>(r.kernel.grid[0]) * r.kernel.grid[1] * r.kernel.grid[2]);
    EXPECT_EQ(p.threads, r.kernel.block[0]);
    EXPECT_EQ(p.smem_bytes, r.kernel.smem_dynamic_bytes);
    EXPECT_EQ(p.ctas_per_sm, static_cast<int>(r.measurement("blocks_per_sm").value_or(-1)));
    EXPECT_EQ(p.kv_heads_per_cta == 2, r.kernel.kernel_name.find("_kvh2") != std::string::npos) << r.kernel.kernel_name;
  }
}

// A K8/V8 wgmma grid at D = 64 runs two kv heads per CTA, split or not, with the splits of its
// own CTAs: at B = 1 twice those of one head (the one-head plan would be 32 splits of 8 CTAs:
// 33 fill the slots, and 32 of their 1024-token length cover the context);
// at B = 64, S = 4096 the 256 two-head CTAs stay one unsplit wave.
TEST(CudaKernelPlan, WgmmaAtD64PairsKvHeads) {
  OperatingPoint op = headline_k8v8();
  op.mma = Mma::wgmma;
  op.head_dim = 64;
  op.batch = 1;
  op.context = 32768;
  const CudaKernelPlan split = plan_cuda_kernel(op, 132, 64);
  EXPECT_EQ(split.kv_heads_per_cta, 2);
  EXPECT_EQ(split.splits, 64);  // 66 fill the slots; 64 of 512 tokens cover the context
  EXPECT_EQ(split.ctas, 64 * 4);
  EXPECT_EQ(split.threads, 32 * 9);
  op.batch = 64;
  op.context = 4096;
  const CudaKernelPlan unsplit = plan_cuda_kernel(op, 132, 64);
  EXPECT_EQ(unsplit.kv_heads_per_cta, 2);
  EXPECT_EQ(unsplit.splits, 1);
  EXPECT_EQ(unsplit.ctas, 64 * 4);
  op.head_dim = 128;  // D = 128 keeps one kv head per CTA
  EXPECT_EQ(plan_cuda_kernel(op, 132, 64).kv_heads_per_cta, 1);
}

TEST(CudaKernelModel, CommittedFitMeetsItsTargetsOnHeldOutShapes) {
  const GpuModel gpu = load_gpu_model("h200", kModels);
  const CudaKernelFit fit = load_cuda_kernel_fit("h200", kModels);
  const HeldOutShapes held = load_held_out_shapes(kModels + "/fits/h200-held-out.json");
  std::vector<MeasuredLatency> held_out, all;
  for (const CaseSummary& c : bundled_cuda_cases()) {
    // separate_kv is outside the targets: since its grid follows its one CTA per SM, the fit
    // underpredicts it (median 16%, p90 27%; docs/sim-model.md), and a refit does not help.
    if (c.record.op.mode == TransformMode::separate_kv) continue;
    const MeasuredLatency m{c.record.op, *c.record.measurement("latency_us")};
    all.push_back(m);
    if (held.holds_out(m.op)) held_out.push_back(m);
  }
  ASSERT_GT(held_out.size(), 100u);
  ASSERT_LT(held_out.size(), all.size());
  const LatencyErrors h = latency_errors(held_out, gpu, fit), a = latency_errors(all, gpu, fit);
  EXPECT_LE(h.median, 0.10);
  EXPECT_LE(h.p90, 0.20);
  EXPECT_LE(a.median, 0.15);
}

TEST(CudaKernelModel, AGpuWithoutItsOwnFitIsModelOnly) {
  OperatingPoint op = headline_k8v8();
  const CostEstimate h200 = estimate_costs(op, load_gpu_model("h200", kModels));
  const CostEstimate h100 = estimate_costs(op, load_gpu_model("h100_sxm", kModels));
  EXPECT_EQ(h200.notes.find("model-only"), std::string::npos) << h200.notes;
  EXPECT_NE(h100.notes.find("model-only: fitted on h200"), std::string::npos) << h100.notes;
  const CostEstimate mi300x = estimate_costs(op, load_gpu_model("mi300x", kModels));
  EXPECT_NE(mi300x.notes.find("model-only: datasheet rates"), std::string::npos) << mi300x.notes;
  EXPECT_EQ(h200.tile_tokens, 64);              // two MMA warps of 32 tokens per kv head
  EXPECT_GT(h100.latency_us, h200.latency_us);  // less bandwidth for the same bytes
}

TEST(CudaKernelModel, B200ReadsMxfp8ScalesAndFeedsTheBlockScaledMma) {
  OperatingPoint op = headline_k8v8();
  const GpuModel b200 = load_gpu_model("b200", kModels);
  const CostEstimate plain = estimate_costs(op, b200);
  op.k_repr = KRepr::mxfp8;
  const CostEstimate mx = estimate_costs(op, b200);
  ASSERT_TRUE(mx.supported) << mx.why_unsupported;
  EXPECT_EQ(mx.qk_matrix_path, "mxf8_mxf8");
  EXPECT_EQ(mx.pv_matrix_path, "mxf8_mxf8");  // k_only: P and V both block-scaled
  EXPECT_NE(mx.notes.find("model-only"), std::string::npos) << mx.notes;
  // 1/32 more bytes per FP8 element; memory-bound at this shape, so about that much slower.
  EXPECT_NEAR(mx.bytes_moved / plain.bytes_moved, 1.0 + 1.0 / 32, 0.002);
  EXPECT_GT(mx.latency_us, plain.latency_us);
  EXPECT_LT(mx.latency_us, plain.latency_us * 1.06);
  EXPECT_FALSE(mx.per_tile_us.has(Stage::k_prep));  // the MMA applies the scales
  // Converted in the tile (transform), each element is also multiplied by its block's scale.
  op.k_path = KPath::transform;
  op.mode = TransformMode::full;
  const CostEstimate mx_transform = estimate_costs(op, b200);
  op.k_repr = KRepr::plain;
  const CostEstimate plain_transform = estimate_costs(op, b200);
  ASSERT_TRUE(mx_transform.supported);
  EXPECT_EQ(mx_transform.qk_matrix_path, "bf16_bf16");
  EXPECT_GT(mx_transform.per_tile_us[Stage::k_prep], plain_transform.per_tile_us[Stage::k_prep]);
}

TEST(CudaKernelModel, Mxfp8NeedsABlockScaledMma) {
  OperatingPoint op = headline_k8v8();
  op.k_repr = KRepr::mxfp8;
  for (const char* gpu : {"h200", "mi300x"}) {
    const CostEstimate e = estimate_costs(op, load_gpu_model(gpu, kModels));
    EXPECT_FALSE(e.supported) << gpu;
    EXPECT_NE(e.why_unsupported.find("k_repr"), std::string::npos) << e.why_unsupported;
    EXPECT_NE(e.why_unsupported.find("mxf8_mxf8"), std::string::npos) << e.why_unsupported;
  }
}

TEST(CudaKernelFitFile, NamesTheBadField) {
  EXPECT_NO_THROW(parse_cuda_kernel_fit(valid_fit(), "f.json"));
  auto expect_error = [](const nlohmann::json& j, const std::string& field) {
    try {
      parse_cuda_kernel_fit(j, "f.json");
      ADD_FAILURE() << "accepted a fit without a valid " << field;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("'" + field + "'"), std::string::npos) << e.what();
    }
  };
  nlohmann::json j = valid_fit();
  j["coefficients"]["launch_us"].erase("source");
  expect_error(j, "coefficients.launch_us.source");
  j = valid_fit();
  j["coefficients"]["combine_us"]["value"] = -1;
  expect_error(j, "coefficients.combine_us.value");
  j = valid_fit();
  j["coefficients"]["bandwidth_efficiency"]["value"] = 1.5;
  expect_error(j, "coefficients.bandwidth_efficiency.value");
  j = valid_fit();
  j["coefficients"].erase("wave_fill_us");
  expect_error(j, "coefficients.wave_fill_us");
  j = valid_fit();
  j.erase("fitted_on");
  expect_error(j, "fitted_on");
}

TEST(HeldOutShapes, AnEntryMatchesOnEveryFieldItNames) {
  HeldOutShapes held;
  HeldOutShapes::Match by_context;
  by_context.context = 2048;
  HeldOutShapes::Match b16_k8v8;
  b16_k8v8.batch = 16;
  b16_k8v8.kv = "k8v8";
  held.entries = {by_context, b16_k8v8};
  OperatingPoint op;
  op.batch = 16;
  op.context = 4096;
  op.kv = KvDtype::k8v8;
  EXPECT_TRUE(held.holds_out(op));
  op.kv = KvDtype::k16v16;
  EXPECT_FALSE(held.holds_out(op));
  op.context = 2048;
  EXPECT_TRUE(held.holds_out(op));
}

TEST(CudaKernelFit, FittingFromAPerturbedStartLowersTheError) {
  const GpuModel gpu = load_gpu_model("h200", kModels);
  const CudaKernelFit committed = load_cuda_kernel_fit("h200", kModels);
  std::vector<MeasuredLatency> cases;
  for (const CaseSummary& c : bundled_cuda_cases())
    if (c.record.op.batch == 64) cases.push_back({c.record.op, *c.record.measurement("latency_us")});
  CudaKernelFit start = committed;
  start.bandwidth_efficiency = 0.6;
  start.launch_us = 20;
  const double before = latency_errors(cases, gpu, start).median;
  const CudaKernelFit fitted = fit_cuda_kernel(cases, gpu, start, 400);
  EXPECT_LT(latency_errors(cases, gpu, fitted).median, 0.5 * before);
  EXPECT_GT(fitted.bandwidth_efficiency, 0.8);  // B=64 is bandwidth-bound: the efficiency comes back
}
