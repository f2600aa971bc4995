// The HIP decode kernels' own source run on the host (kernel_host_emulation.h: amdgcn
// builtins emulated lane by lane, MFMAs in the 16x16 layouts, FNUZ FP8) on the cache the
// plugin uploads (the store's OCP cache re-encoded to FNUZ), against the float64 reference
// with FNUZ Q: paging, ragged lengths, GQA beyond one workgroup's 16 heads, and split-KV
// with its combine.
#include <gtest/gtest.h>

#include <cstdio>
#include <numeric>
#include <vector>

#include "backends/hip/decode_launch.h"
#include "core/numerics/decode_problem.h"
#include "core/numerics/fnuz_decode_emulation.h"
#include "core/numerics/fp8.h"
#include "tests/hip/kernel_host_emulation.h"

using namespace tilepath;

namespace {

struct Case {
  KvDtype kv;
  KPath path;
  TransformMode mode;
  int head_dim;
  int q_heads, kv_heads, page_size, splits;
  std::vector<int> lengths;
};

double run_case(const Case& k, bool reencode = true, hip::Ablation ablation = {}) {
  OperatingPoint op;
  op.batch = static_cast<int>(k.lengths.size());
  op.context = *std::max_element(k.lengths.begin(), k.lengths.end());
  op.context_lengths = k.lengths;
  op.q_heads = k.q_heads;
  op.kv_heads = k.kv_heads;
  op.head_dim = k.head_dim;
  op.page_size = k.page_size;
  op.kv = k.kv;
  op.k_path = k.path;
  op.mode = k.mode;
  op.validate();
  const numerics::DecodeProblem ocp = numerics::make_problem(op, 21);
  const numerics::DecodeProblem p = reencode ? numerics::to_fnuz_cache(ocp) : ocp;

  std::vector<std::uint16_t> out(p.q.size(), 0xFFFF);
  std::vector<float> partial_out(std::size_t(k.splits) * p.q.size());
  std::vector<float> partial_lse(std::size_t(k.splits) * op.batch * op.q_heads);
  hip::DecodeArgs a;
  a.batch = op.batch, a.q_heads = op.q_heads, a.kv_heads = op.kv_heads, a.head_dim = op.head_dim;
  a.page_size = op.page_size, a.max_pages_per_seq = p.max_pages_per_seq;
  a.kv_dtype = int(op.kv), a.k_path = int(op.k_path), a.mode = int(op.mode);
  a.splits = k.splits, a.split_tokens = hip::split_tokens_for(op.context, k.splits);
  a.scale_per_head = p.k_scale.size() > 1 ? 1 : 0;
  a.softmax_scale = p.softmax_scale;
  a.q = p.q.data();
  a.k_pages = p.k8.empty() ? static_cast<const void*>(p.k16.data()) : p.k8.data();
  a.v_pages = p.v8.empty() ? static_cast<const void*>(p.v16.data()) : p.v8.data();
  a.page_table = p.page_table.data(), a.lengths = p.lengths.data();
  a.k_scale = p.k_scale.data(), a.v_scale = p.v_scale.data();
  a.out = out.data(), a.partial_out = partial_out.data(), a.partial_lse = partial_lse.data();
  const std::string why = hip::emulation::run_decode(a, ablation);
  EXPECT_EQ(why, "");
  EXPECT_EQ(std::count(out.begin(), out.end(), std::uint16_t(0xFFFF)), 0) << "unwritten outputs";

  std::vector<float> got(out.size());
  std::transform(out.begin(), out.end(), got.begin(), numerics::bf16_to_float);
  std::vector<int> all(op.batch);
  std::iota(all.begin(), all.end(), 0);
  const auto ref = numerics::reference_decode(ocp, all, numerics::QQuantization::e4m3_fnuz);
  const double err = numerics::compare(got, ref).rel_l2;
  std::printf("%s d%d splits %d ablation %d/%d: rel_l2 %.3g (tolerance %.3g)\n", op.variant_label().c_str(), k.head_dim,
              k.splits, int(ablation.kind), ablation.stage, err, numerics::default_tolerance(op));
  if (reencode) {
    EXPECT_LE(err, numerics::default_tolerance(op)) << op.variant_label() << " d" << k.head_dim;
  }
  return err;
}

}  // namespace

TEST(HipKernelsOnHost, Fp8QkKOnlyUsesFp8MfmaForBothProducts) {
  run_case({KvDtype::k8v8, KPath::fp8_qk, TransformMode::k_only, 128, 8, 2, 16, 1, {100, 37}});
}

TEST(HipKernelsOnHost, Fp8QkKOnlySplitKvWithCombine) {
  run_case({KvDtype::k8v8, KPath::fp8_qk, TransformMode::k_only, 64, 4, 1, 16, 3, {300, 129}});
}

TEST(HipKernelsOnHost, Fp8QkFullAcrossTwoHeadChunks) {
  // a GQA group of 20 query heads: two workgroups (16 + 4) per kv head
  run_case({KvDtype::k8v8, KPath::fp8_qk, TransformMode::full, 128, 40, 2, 16, 1, {70}});
}

TEST(HipKernelsOnHost, TransformPathsConvertKToBf16) {
  run_case({KvDtype::k8v8, KPath::transform, TransformMode::full, 128, 8, 2, 8, 1, {150, 33}});
  run_case({KvDtype::k8v8, KPath::transform, TransformMode::k_only, 64, 4, 2, 4, 2, {90}});
  run_case({KvDtype::k8v16, KPath::transform, TransformMode::full, 64, 8, 4, 16, 1, {64}});
}

TEST(HipKernelsOnHost, SixteenBitOperandPaths) {
  run_case({KvDtype::k8v16, KPath::fp8_qk, TransformMode::none, 128, 8, 2, 16, 1, {45}});
  run_case({KvDtype::k16v8, KPath::k16, TransformMode::full, 128, 8, 2, 16, 1, {77, 130}});
  run_case({KvDtype::k16v16, KPath::k16, TransformMode::none, 256, 4, 2, 32, 1, {40}});
  run_case({KvDtype::k16v16, KPath::k16, TransformMode::none, 64, 16, 1, 16, 2, {200}});
}

TEST(HipKernelsOnHost, TheOcpCacheReadAsFnuzFailsTheCheck) {
  // Without the re-encoding at upload every K and V value reads as half of itself.
  const double err = run_case({KvDtype::k8v8, KPath::fp8_qk, TransformMode::k_only, 128, 8, 2, 16, 1, {100}}, false);
  EXPECT_GT(err, 0.1);
}

TEST(HipKernelsOnHost, ADoubledStageComputesTheSameOutput) {
  // The "twice" ablations time a stage run twice; their output must stay the function's.
  const Case fp8 = {KvDtype::k8v8, KPath::fp8_qk, TransformMode::k_only, 128, 8, 2, 16, 1, {70}};
  const Case transform = {KvDtype::k8v8, KPath::transform, TransformMode::full, 128, 8, 2, 16, 1, {70}};
  for (int stage : {TP_STAGE_QK, TP_STAGE_SOFTMAX, TP_STAGE_V_PREP, TP_STAGE_PV})
    run_case(fp8, true, {hip::AblationKind::twice, stage});
  for (int stage : {TP_STAGE_K_PREP, TP_STAGE_QK, TP_STAGE_SOFTMAX, TP_STAGE_V_PREP, TP_STAGE_PV})
    run_case(transform, true, {hip::AblationKind::twice, stage});
}
