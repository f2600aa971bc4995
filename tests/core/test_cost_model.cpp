// The stage-cost model (core/perf/cost_model.h) on the shipped GPU models.

#include "core/perf/cost_model.h"

#include "core/ii_model.h"
#include "core/stage_graph.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <gtest/gtest.h>

using tilepath::CacheState;
using tilepath::KPath;
using tilepath::KRepr;
using tilepath::KvDtype;
using tilepath::Mma;
using tilepath::OperatingPoint;
using tilepath::RopeLayout;
using tilepath::Stage;
using tilepath::TransformMode;
using tilepath::perf::CostEstimate;
using tilepath::perf::estimate_costs;
using tilepath::perf::GpuModel;
using tilepath::perf::load_gpu_model;

namespace {

const std::string kModelsDir = std::string(TILEPATH_SOURCE_DIR) + "/models";

GpuModel gpu(const std::string& id) { return load_gpu_model(id, kModelsDir); }

OperatingPoint variant(KvDtype kv, KPath path, TransformMode mode, int batch = 64, int context = 4096) {
  OperatingPoint op;
  op.batch = batch;
  op.context = context;
  op.q_heads = 32;
  op.kv_heads = 8;
  op.head_dim = 128;
  op.kv = kv;
  op.k_path = path;
  op.mode = mode;
  op.cache = CacheState::hbm_cold;
  return op;
}

OperatingPoint k16v16(int batch = 64, int context = 4096) {
  return variant(KvDtype::k16v16, KPath::k16, TransformMode::none, batch, context);
}

// Every valid variant of the four dtype controls.
std::vector<OperatingPoint> all_variants(OperatingPoint base) {
  std::vector<OperatingPoint> out;
  for (KvDtype kv : {KvDtype::k16v16, KvDtype::k8v16, KvDtype::k16v8, KvDtype::k8v8}) {
    for (KPath path : tilepath::valid_k_paths(kv)) {
      for (TransformMode mode : tilepath::valid_modes(kv, path)) {
        base.kv = kv;
        base.k_path = path;
        base.mode = mode;
        out.push_back(base);
      }
    }
  }
  return out;
}

double stage(const CostEstimate& e, Stage s) { return e.per_tile_us[s]; }

}  // namespace

TEST(CostModel, H200FloorIsTheBytesOverTheMeasuredReadBandwidth) {
  const GpuModel h200 = gpu("h200");
  const OperatingPoint op = k16v16();
  const CostEstimate e = estimate_costs(op, h200);
  ASSERT_TRUE(e.supported) << e.why_unsupported;
  // K and V caches in BF16: B * S * Hk * D * (2 + 2) bytes dominate the floor.
  const double kv_bytes = 64.0 * 4096 * 8 * 128 * 4;
  EXPECT_GE(e.bytes_moved, kv_bytes);
  EXPECT_LT(e.bytes_moved, kv_bytes * 1.01);
  EXPECT_DOUBLE_EQ(e.bytes_moved, op.bytes_moved());
  const double bytes_per_us_at_4550_gbps = 4550e3;
  EXPECT_NEAR(e.floor_us, e.bytes_moved / bytes_per_us_at_4550_gbps, 1e-9 * e.floor_us);
  EXPECT_DOUBLE_EQ(e.read_bandwidth_gbps, 4550);
  // A memory-bound case this large should be predicted close to (never below) the floor
  // (the kernels measure 1.08-1.14x of it at large batch).
  EXPECT_GT(e.latency_us, e.floor_us);
  EXPECT_LT(e.latency_us, 1.15 * e.floor_us);
  EXPECT_EQ(e.limiting_stage, Stage::k_load);
}

TEST(CostModel, K8V8MovesFewerBytesAndIsFasterThanK16V16Cold) {
  for (const char* id : {"h200", "h100_sxm", "b200", "a100_sxm", "mi300x"}) {
    SCOPED_TRACE(id);
    const GpuModel g = gpu(id);
    const CostEstimate base = estimate_costs(k16v16(), g);
    ASSERT_TRUE(base.supported) << base.why_unsupported;
    int compared = 0;
    for (const OperatingPoint& op : all_variants(k16v16())) {
      // separate_kv is limited by its converter warps, not by the bytes
      if (op.kv != KvDtype::k8v8 || op.mode == TransformMode::separate_kv) continue;
      const CostEstimate e = estimate_costs(op, g);
      if (!e.supported) continue;
      SCOPED_TRACE(op.variant_label());
      EXPECT_LT(e.bytes_moved, base.bytes_moved);
      EXPECT_LT(e.latency_us, base.latency_us);
      ++compared;
    }
    EXPECT_GE(compared, 1) << "no K8/V8 variant is supported";
  }
}

TEST(CostModel, FloorFractionNeverExceedsOne) {
  std::vector<int> ragged = {1, 700, 4096, 33, 12000};
  for (const auto& g : tilepath::perf::load_gpu_models(kModelsDir)) {
    for (int batch : {1, 3, 64, 256}) {
      for (int context : {17, 1000, 4096, 65536}) {
        for (CacheState cache : {CacheState::hbm_cold, CacheState::l2_warm}) {
          OperatingPoint base = k16v16(batch, context);
          base.cache = cache;
          for (const OperatingPoint& op : all_variants(base)) {
            const CostEstimate e = estimate_costs(op, g);
            if (!e.supported) continue;
            SCOPED_TRACE(g.id + " " + op.key());
            EXPECT_GT(e.latency_us, 0);
            EXPECT_LE(e.floor_us / e.latency_us, 1.0);
            EXPECT_TRUE(std::isfinite(e.ii_us) && e.ii_us > 0);
          }
        }
      }
    }
    OperatingPoint op = variant(KvDtype::k8v8, KPath::transform, TransformMode::full, 5);
    op.context_lengths = ragged;
    const CostEstimate e = estimate_costs(op, g);
    if (e.supported) {
      EXPECT_LE(e.floor_us / e.latency_us, 1.0) << g.id << " ragged";
    }
  }
}

TEST(CostModel, Fp8QkIsUnsupportedOnA100WithAReason) {
  const OperatingPoint op = variant(KvDtype::k8v8, KPath::fp8_qk, TransformMode::full);
  const CostEstimate a100 = estimate_costs(op, gpu("a100_sxm"));
  EXPECT_FALSE(a100.supported);
  EXPECT_NE(a100.why_unsupported.find("e4m3_e4m3"), std::string::npos) << a100.why_unsupported;
  EXPECT_NE(a100.why_unsupported.find("FP8"), std::string::npos) << a100.why_unsupported;

  for (const char* id : {"h100_sxm", "h200", "b200", "mi300x"}) {
    EXPECT_TRUE(estimate_costs(op, gpu(id)).supported) << id;
  }
}

TEST(CostModel, Mi300xRunsFp8OnTheFnuzMfmaWithTheHipKernelsShape) {
  // MI300X has no OCP E4M3 MFMA; the HIP kernels run FP8 on FNUZ (the cache re-encoded).
  const OperatingPoint k_only = variant(KvDtype::k8v8, KPath::fp8_qk, TransformMode::k_only);
  const CostEstimate e = estimate_costs(k_only, gpu("mi300x"));
  ASSERT_TRUE(e.supported) << e.why_unsupported;
  EXPECT_EQ(e.qk_matrix_path, "e4m3fnuz_e4m3fnuz");
  EXPECT_EQ(e.pv_matrix_path, "e4m3fnuz_e4m3fnuz");
  EXPECT_EQ(e.tile_tokens, 128);  // 4 waves x 32 tokens (backends/hip/kernels/decode_traits.h)
  EXPECT_EQ(e.block_threads, 256);
  EXPECT_TRUE(e.per_tile_us.has(Stage::qk));
  EXPECT_TRUE(e.per_tile_us.has(Stage::q_quant));
  EXPECT_FALSE(e.per_tile_us.has(Stage::k_prep));  // no K conversion on the FP8 QK path
  // The FP8 MFMA runs at twice the BF16 rate: QK of the same tile costs half.
  const CostEstimate bf16 =
      estimate_costs(variant(KvDtype::k8v8, KPath::transform, TransformMode::k_only), gpu("mi300x"));
  ASSERT_TRUE(bf16.supported) << bf16.why_unsupported;
  EXPECT_EQ(bf16.qk_matrix_path, "bf16_bf16");
  EXPECT_NEAR(e.per_tile_us[Stage::qk] * 2, bf16.per_tile_us[Stage::qk], 1e-3 * bf16.per_tile_us[Stage::qk]);
  // A GQA group of 32 query heads takes two workgroups of 16 per kv head.
  OperatingPoint wide = k_only;
  wide.q_heads = 64;
  wide.kv_heads = 2;
  wide.batch = 64;
  const CostEstimate two = estimate_costs(wide, gpu("mi300x"));
  ASSERT_TRUE(two.supported);
  EXPECT_EQ(two.ctas, 64 * 2 * 2 * two.splits);
  // The HIP kernels have no converter waves.
  const CostEstimate sep =
      estimate_costs(variant(KvDtype::k8v8, KPath::transform, TransformMode::separate_kv), gpu("mi300x"));
  EXPECT_FALSE(sep.supported);
  EXPECT_NE(sep.why_unsupported.find("separate_kv"), std::string::npos) << sep.why_unsupported;
  // nor a k_bias stage for prebias
  OperatingPoint prebias = k_only;
  prebias.k_repr = tilepath::KRepr::prebias;
  const CostEstimate pb = estimate_costs(prebias, gpu("mi300x"));
  EXPECT_FALSE(pb.supported);
  EXPECT_NE(pb.why_unsupported.find("k_bias"), std::string::npos) << pb.why_unsupported;
}

TEST(CostModel, KOnlyNeedsAnFp8PvSoA100CannotRunIt) {
  const OperatingPoint op = variant(KvDtype::k8v8, KPath::transform, TransformMode::k_only);
  const CostEstimate e = estimate_costs(op, gpu("a100_sxm"));
  EXPECT_FALSE(e.supported);
  EXPECT_NE(e.why_unsupported.find("PV"), std::string::npos) << e.why_unsupported;
  EXPECT_TRUE(estimate_costs(op, gpu("h200")).supported);
}

TEST(CostModel, TransformIsSupportedOnH200InEveryMode) {
  const GpuModel h200 = gpu("h200");
  for (TransformMode mode : {TransformMode::full, TransformMode::k_only, TransformMode::separate_kv}) {
    const CostEstimate e = estimate_costs(variant(KvDtype::k8v8, KPath::transform, mode), h200);
    EXPECT_TRUE(e.supported) << tilepath::to_string(mode) << ": " << e.why_unsupported;
    EXPECT_TRUE(e.per_tile_us.has(Stage::k_prep)) << tilepath::to_string(mode);
    EXPECT_EQ(e.qk_matrix_path, "bf16_bf16");
  }
  // A transform with FP8 K is also the only FP8 path A100 has.
  EXPECT_TRUE(
      estimate_costs(variant(KvDtype::k8v16, KPath::transform, TransformMode::full), gpu("a100_sxm")).supported);
}

TEST(CostModel, StagesPresentFollowTheVariant) {
  const GpuModel h200 = gpu("h200");
  const CostEstimate k16 = estimate_costs(variant(KvDtype::k16v8, KPath::k16, TransformMode::full), h200);
  EXPECT_FALSE(k16.per_tile_us.has(Stage::k_prep));
  EXPECT_TRUE(k16.per_tile_us.has(Stage::v_prep));
  EXPECT_FALSE(k16.per_tile_us.has(Stage::q_quant));

  const CostEstimate fp8qk = estimate_costs(variant(KvDtype::k8v8, KPath::fp8_qk, TransformMode::k_only), h200);
  EXPECT_FALSE(fp8qk.per_tile_us.has(Stage::k_prep));
  EXPECT_FALSE(fp8qk.per_tile_us.has(Stage::v_prep));
  EXPECT_TRUE(fp8qk.per_tile_us.has(Stage::q_quant));
  EXPECT_EQ(fp8qk.qk_matrix_path, "e4m3_e4m3");
  EXPECT_EQ(fp8qk.pv_matrix_path, "e4m3_e4m3");
  // mma_sync's E4M3 MMA is lowered to F16 HMMA on Hopper: the 16-bit rate, as the
  // transform path's QK. wgmma's QGMMA runs at the FP8 rate, twice the 16-bit one.
  const CostEstimate bf16qk = estimate_costs(variant(KvDtype::k8v8, KPath::transform, TransformMode::k_only), h200);
  EXPECT_NEAR(stage(fp8qk, Stage::qk), stage(bf16qk, Stage::qk), 1e-9 * stage(bf16qk, Stage::qk));
  OperatingPoint wgmma = variant(KvDtype::k8v8, KPath::fp8_qk, TransformMode::k_only);
  wgmma.mma = Mma::wgmma;
  const CostEstimate fp8qk_wgmma = estimate_costs(wgmma, h200);
  ASSERT_TRUE(fp8qk_wgmma.supported) << fp8qk_wgmma.why_unsupported;
  const double rate_ratio = h200.path("e4m3_e4m3")->dense_tflops / h200.path("bf16_bf16")->dense_tflops;
  EXPECT_NEAR(stage(fp8qk_wgmma, Stage::qk) * rate_ratio, stage(bf16qk, Stage::qk), 1e-9 * stage(bf16qk, Stage::qk));
  EXPECT_NEAR(stage(fp8qk_wgmma, Stage::pv) * rate_ratio, stage(fp8qk, Stage::pv), 1e-9 * stage(fp8qk, Stage::pv));
  EXPECT_NE(fp8qk_wgmma.notes.find("mma wgmma: model-only"), std::string::npos) << fp8qk_wgmma.notes;
  EXPECT_EQ(fp8qk.notes.find("wgmma"), std::string::npos) << fp8qk.notes;
  // A GPU without wgmma refuses it, naming the field.
  const CostEstimate on_a100 =
      estimate_costs(variant(KvDtype::k16v8, KPath::k16, TransformMode::full), gpu("a100_sxm"));
  EXPECT_TRUE(on_a100.supported) << on_a100.why_unsupported;
  OperatingPoint a100_wgmma = variant(KvDtype::k16v8, KPath::k16, TransformMode::full);
  a100_wgmma.mma = Mma::wgmma;
  const CostEstimate refused = estimate_costs(a100_wgmma, gpu("a100_sxm"));
  EXPECT_FALSE(refused.supported);
  EXPECT_EQ(refused.why_unsupported,
            "mma: a100_sxm has no wgmma (its model's matrix_instructions say why); allowed here: mma_sync");

  const CostEstimate plain = estimate_costs(k16v16(), h200);
  for (Stage s : {Stage::k_prep, Stage::v_prep, Stage::q_quant, Stage::combine}) EXPECT_FALSE(plain.per_tile_us.has(s));
  for (Stage s : {Stage::k_load, Stage::qk, Stage::softmax, Stage::v_load, Stage::pv, Stage::accum}) {
    EXPECT_GT(stage(plain, s), 0) << tilepath::to_string(s);
  }
}

// k_bias: only a post-RoPE prebias FP8-K cache restores its bias in score space, at
// least one QK-sized 16-bit product per tile on the QK warps.
TEST(CostModel, KBiasOnlyForAPostRopePrebiasCache) {
  const GpuModel h200 = gpu("h200");
  OperatingPoint op = variant(KvDtype::k8v8, KPath::fp8_qk, TransformMode::k_only);
  EXPECT_FALSE(estimate_costs(op, h200).per_tile_us.has(Stage::k_bias));
  op.k_repr = KRepr::prebias;
  const CostEstimate prebias = estimate_costs(op, h200);
  ASSERT_TRUE(prebias.per_tile_us.has(Stage::k_bias));
  const CostEstimate transform = estimate_costs(variant(KvDtype::k8v8, KPath::transform, TransformMode::k_only), h200);
  EXPECT_GT(stage(prebias, Stage::k_bias), stage(transform, Stage::qk));  // the 16-bit MMA alone is a BF16 qk
  op.k_path = KPath::transform;
  op.rope = RopeLayout::pre_rope;  // the bias goes back into K in k_prep instead
  const CostEstimate pre = estimate_costs(op, h200);
  EXPECT_FALSE(pre.per_tile_us.has(Stage::k_bias));
  EXPECT_GT(stage(pre, Stage::k_prep), stage(transform, Stage::k_prep));
}

// The design note's agent formulas: the model of a kernel of the design note's shape (the
// HIP kernels', on MI300X). NVIDIA GPUs model the CUDA kernels (test_cuda_kernel_model.cpp).
TEST(CostModel, IiReproducesTheDesignNoteFormulas) {
  const GpuModel h200 = gpu("mi300x");
  // Small batch, L2-warm: memory is cheap, so the compute stages matter.
  for (int batch : {1, 8, 64}) {
    OperatingPoint op = variant(KvDtype::k8v8, KPath::transform, TransformMode::full, batch, 1024);
    op.cache = CacheState::l2_warm;
    const CostEstimate e = estimate_costs(op, h200);
    const double load = stage(e, Stage::k_load) + stage(e, Stage::v_load);
    // II_K8 = max(load K8, prep K8 + QK, softmax, PV) (PV warps also convert V and accumulate in full mode)
    const double expected = std::max({load, stage(e, Stage::k_prep) + stage(e, Stage::qk), stage(e, Stage::softmax),
                                      stage(e, Stage::v_prep) + stage(e, Stage::pv) + stage(e, Stage::accum)});
    EXPECT_NEAR(e.ii_us, expected, 1e-12) << batch;

    op.mode = TransformMode::separate_kv;
    const CostEstimate s = estimate_costs(op, h200);
    if (!s.supported) continue;  // the HIP kernels have no separate_kv
    const double expected_separate =
        std::max({stage(s, Stage::k_load) + stage(s, Stage::v_load), stage(s, Stage::k_prep) + stage(s, Stage::v_prep),
                  stage(s, Stage::qk), stage(s, Stage::softmax), stage(s, Stage::pv) + stage(s, Stage::accum)});
    EXPECT_NEAR(s.ii_us, expected_separate, 1e-12) << batch;
  }
}

TEST(CostModel, IiAgreesWithTheStageGraphIiModel) {
  // The cost model's own II (used for its latency) must be what core's II model
  // computes from the same stage costs on the variant's stage graph.
  for (const char* id : {"mi300x", "a100_sxm"}) {  // the design-note agent model (not the CUDA kernels')
    const GpuModel g = gpu(id);
    for (int batch : {1, 64}) {
      for (const OperatingPoint& op : all_variants(k16v16(batch, 2048))) {
        const CostEstimate e = estimate_costs(op, g);
        if (!e.supported) continue;
        SCOPED_TRACE(std::string(id) + " " + op.key());
        // The graph has a combine node only for an explicit split count: give it the one used.
        OperatingPoint resolved = op;
        resolved.splits = e.splits;
        const tilepath::IIPrediction p = tilepath::predict_ii(tilepath::StageGraph::build(resolved), e.per_tile_us);
        EXPECT_NEAR(p.ii_us, e.ii_us, 1e-9 * e.ii_us);
        EXPECT_NEAR(p.once_per_step_us, e.once_per_step_us, 1e-9);
        EXPECT_EQ(p.limiting_stage, e.limiting_stage);
      }
    }
  }
}

TEST(CostModel, LatencyIsOncePerStepPlusFillPlusTilesTimesIi) {
  const GpuModel h200 = gpu("mi300x");  // the design-note agent model
  const CostEstimate e = estimate_costs(variant(KvDtype::k8v8, KPath::fp8_qk, TransformMode::full, 2, 8192), h200);
  ASSERT_TRUE(e.supported);
  const double pipeline = e.once_per_step_us + e.fill_us + (e.tiles_walked - 1) * e.ii_us + e.launch_overhead_us;
  EXPECT_GE(e.latency_us, pipeline);
  // The rest is Q/O/page-table traffic: small next to the pipeline.
  EXPECT_LT(e.latency_us - pipeline, 0.05 * e.latency_us);
  EXPECT_GT(e.fill_us, e.ii_us);
  // Longer contexts take longer.
  const CostEstimate longer =
      estimate_costs(variant(KvDtype::k8v8, KPath::fp8_qk, TransformMode::full, 2, 16384), h200);
  EXPECT_GT(longer.latency_us, e.latency_us);
}

TEST(CostModel, AutoSplitsFillTheSmsForSmallBatchLongContext) {
  const GpuModel h200 = gpu("h200");
  const CostEstimate small = estimate_costs(k16v16(1, 32768), h200);
  EXPECT_GT(small.splits, 1);
  EXPECT_GE(small.ctas, h200.sm_count);
  EXPECT_EQ(small.ctas, 1 * 8 * small.splits);
  EXPECT_TRUE(small.per_tile_us.has(Stage::combine));

  const CostEstimate large = estimate_costs(k16v16(64, 4096), h200);
  EXPECT_EQ(large.splits, 1);
  EXPECT_EQ(large.ctas, 64 * 8);
  EXPECT_FALSE(large.per_tile_us.has(Stage::combine));

  // A short context cannot be split into tiny pieces.
  const CostEstimate short_ctx = estimate_costs(k16v16(1, 128), h200);
  EXPECT_EQ(short_ctx.splits, 1);

  OperatingPoint fixed = k16v16(1, 32768);
  fixed.splits = 3;
  EXPECT_EQ(estimate_costs(fixed, h200).splits, 3);
  // Splitting helps the small batch: fewer tiles per CTA.
  EXPECT_LT(small.latency_us, estimate_costs(fixed, h200).latency_us);
}

TEST(CostModel, L2WarmUsesL2BandwidthOnlyWhenTheKvFits) {
  const GpuModel h200 = gpu("h200");
  OperatingPoint fits = variant(KvDtype::k8v8, KPath::transform, TransformMode::full, 1, 4096);  // 8 MB of KV
  const CostEstimate cold = estimate_costs(fits, h200);
  fits.cache = CacheState::l2_warm;
  const CostEstimate warm = estimate_costs(fits, h200);
  EXPECT_FALSE(cold.served_from_l2);
  EXPECT_TRUE(warm.served_from_l2);
  EXPECT_DOUBLE_EQ(warm.read_bandwidth_gbps, h200.l2_read_bandwidth_gbps);
  // One request's tiles are few and compute-limited in the CUDA kernels' model: the L2 can
  // make the step faster, never slower.
  EXPECT_LE(warm.latency_us, cold.latency_us);
  EXPECT_LT(warm.floor_us, cold.floor_us);
  EXPECT_LE(warm.floor_us / warm.latency_us, 1.0);

  OperatingPoint big = k16v16(64, 4096);  // 1 GB of KV
  big.cache = CacheState::l2_warm;
  const CostEstimate big_warm = estimate_costs(big, h200);
  EXPECT_FALSE(big_warm.served_from_l2);
  EXPECT_DOUBLE_EQ(big_warm.latency_us, estimate_costs(k16v16(64, 4096), h200).latency_us);
}

TEST(CostModel, BandwidthIsSharedByResidentCtas) {
  const GpuModel h200 = gpu("h200");
  // Past one CTA per SM, more CTAs make each tile's load slower, not the whole kernel faster.
  const CostEstimate b64 = estimate_costs(k16v16(64, 4096), h200);
  const CostEstimate b128 = estimate_costs(k16v16(128, 4096), h200);
  EXPECT_GE(stage(b128, Stage::k_load), stage(b64, Stage::k_load));
  EXPECT_NEAR(b128.latency_us / b64.latency_us, 2.0, 0.1);
  EXPECT_LE(b64.concurrent_ctas, h200.sm_count * b64.ctas_per_sm);
}

TEST(CostModel, InvalidOperatingPointThrowsNamingTheField) {
  OperatingPoint op = k16v16();
  op.kv_heads = 0;
  try {
    estimate_costs(op, gpu("h200"));
    FAIL() << "expected a ValidationError";
  } catch (const tilepath::ValidationError& e) {
    EXPECT_EQ(e.field(), "kv_heads");
  }
}
