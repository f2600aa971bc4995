// The isolated stage kernels (docs/stage-model.md, "Isolated stage costs"): every stage of
// a D=128 variant's stage graph has one, no stage outside the graph has one, and each runs
// with the real kernel's grid, block and shared memory, so at its CTAs per SM.
#include <gtest/gtest.h>

#include <sstream>
#include <utility>
#include <vector>

#include "backends/cuda/decode_inputs.h"
#include "backends/cuda/decode_launch.h"
#include "core/stage_graph.h"
#include "cuda_test_support.h"

using namespace tilepath;
using namespace tilepath::cuda;

namespace {

struct IsolatedCase {
  std::string label;
  OperatingPoint op;
};
void PrintTo(const IsolatedCase& c, std::ostream* os) { *os << c.label; }

std::vector<IsolatedCase> isolated_cases() {
  std::vector<IsolatedCase> cases;
  for (KvDtype kv : {KvDtype::k16v16, KvDtype::k8v16, KvDtype::k16v8, KvDtype::k8v8}) {
    for (KPath path : valid_k_paths(kv)) {
      for (TransformMode mode : valid_modes(kv, path)) {
        OperatingPoint op;
        op.batch = 2;
        op.q_heads = 32;
        op.kv_heads = 8;
        op.head_dim = 128;
        op.page_size = 16;
        op.kv = kv;
        op.k_path = path;
        op.mode = mode;
        op.context = 2048;
        op.splits = 2;  // a combine stage too
        std::ostringstream name;
        name << to_string(kv) << "_" << to_string(path) << "_" << to_string(mode);
        cases.push_back({name.str(), op});
        if (kv == KvDtype::k8v8 && mode != TransformMode::separate_kv) {
          op.context = 8192;  // 8192 tokens per CTA: the two-kv-head kernel (kv_heads_per_cta_for)
          op.splits = 1;
          cases.push_back({name.str() + "_kvh2", op});
          op.k_repr = KRepr::prebias;
          cases.push_back({name.str() + "_kvh2_prebias", op});
          op.context = 2048;
          op.splits = 2;
          cases.push_back({name.str() + "_prebias", op});
        }
      }
    }
  }
  return cases;
}

int ctas_per_sm(const KernelInfo& info) {
  int blocks = 0;
  EXPECT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, info.func, int(info.block.x * info.block.y),
                                                          info.smem_dynamic_bytes),
            cudaSuccess);
  return blocks;
}

class IsolatedStages : public ::testing::TestWithParam<IsolatedCase> {
 protected:
  void SetUp() override {
    const std::string reason = test::no_cuda_device_reason();
    if (!reason.empty()) GTEST_SKIP() << "no CUDA device: " << reason;
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
  }
  // The case's inputs uploaded and its real kernel launched once: args_, real_ and its CTAs per SM.
  void launch_real_kernel(const OperatingPoint& op, std::uint64_t seed,
                          numerics::KeyDistribution keys = numerics::KeyDistribution::gaussian) {
    ASSERT_NO_THROW(op.validate());
    const HostDecodeCase host = make_host_case(op, seed, /*allow_tiling=*/false, kTileAboveHostBytes, keys);
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
    inputs_.upload(host, op.splits, stream_, args_);
    ASSERT_EQ(launch_decode(args_, Ablation{}, stream_, &real_), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    real_ctas_per_sm_ = ctas_per_sm(real_);
    ASSERT_GT(real_ctas_per_sm_, 0);
  }
  cudaStream_t stream_ = nullptr;
  DeviceDecodeInputs inputs_;
  DecodeArgs args_;
  KernelInfo real_;
  int real_ctas_per_sm_ = 0;
};

// An ablation kernel launched as the real kernel was: the same grid, block, tile and CTAs per
// SM, its shared memory the real kernel's or more (padded where fewer registers would let more
// CTAs share an SM).
void expect_real_kernels_geometry(const KernelInfo& info, const KernelInfo& real, int real_ctas_per_sm) {
  EXPECT_EQ(info.grid.x, real.grid.x);
  EXPECT_EQ(info.grid.y, real.grid.y);
  EXPECT_EQ(info.grid.z, real.grid.z);
  EXPECT_EQ(info.block.x, real.block.x);
  EXPECT_GE(info.smem_dynamic_bytes, real.smem_dynamic_bytes);
  EXPECT_EQ(info.tile_tokens, real.tile_tokens);
  EXPECT_EQ(ctas_per_sm(info), real_ctas_per_sm) << info.name << " beside " << real.name;
}

// Launches `ablation` over outputs poisoned with NaN; *nonzero: how many outputs are then not
// zero (+0 or -0). An ablation that computes nothing, or zeros only, leaves none.
void launch_over_poisoned_outputs(const DecodeArgs& args, const OperatingPoint& op, const Ablation& ablation,
                                  cudaStream_t stream, KernelInfo* info, std::size_t* nonzero) {
  const std::size_t outputs = std::size_t(op.batch) * op.q_heads * op.head_dim;
  ASSERT_EQ(cudaMemsetAsync(args.out, 0xFF, outputs * sizeof(std::uint16_t), stream), cudaSuccess);
  ASSERT_EQ(launch_decode(args, ablation, stream, info), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess) << "the ablation did not finish cleanly";
  std::vector<std::uint16_t> out(outputs);
  ASSERT_EQ(cudaMemcpy(out.data(), args.out, outputs * sizeof(std::uint16_t), cudaMemcpyDeviceToHost), cudaSuccess);
  *nonzero = 0;
  for (std::uint16_t v : out) *nonzero += (v & 0x7FFFu) != 0;
}

}  // namespace

TEST_P(IsolatedStages, EveryStageOfTheGraphAloneAtTheRealKernelsOccupancy) {
  const OperatingPoint& op = GetParam().op;
  ASSERT_NO_FATAL_FAILURE(launch_real_kernel(
      op, /*seed=*/7,
      op.k_repr == KRepr::prebias ? numerics::KeyDistribution::qwen_bias : numerics::KeyDistribution::gaussian));
  const DecodeArgs& args = args_;
  const KernelInfo& real = real_;
  cudaStream_t stream = stream_;

  const StageGraph graph = StageGraph::build(op);
  for (int s = 0; s < TP_STAGE_COUNT; ++s) {
    const Stage stage = static_cast<Stage>(s);
    const bool in_graph = graph.has_stage(stage);
    const Ablation isolate{AblationKind::isolate, s};
    SCOPED_TRACE(std::string(to_string(stage)));
    ASSERT_EQ(decode_variant_available(args, isolate), in_graph)
        << (in_graph ? "no isolated kernel for a stage of the graph"
                     : "an isolated kernel for a stage not in the graph");
    if (!in_graph) continue;
    KernelInfo info;
    ASSERT_EQ(launch_decode(args, isolate, stream, &info), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    if (stage == Stage::combine) {
      EXPECT_EQ(info.func, nullptr) << "combine alone launches no main kernel";
      continue;
    }
    EXPECT_NE(std::string(info.name).find(std::string("_isolate_") + std::string(to_string(stage))), std::string::npos)
        << info.name;
    EXPECT_EQ(std::string(info.name).find("_kvh2") != std::string::npos,
              std::string(real.name).find("_kvh2") != std::string::npos)
        << info.name << " beside " << real.name;
    expect_real_kernels_geometry(info, real, real_ctas_per_sm_);
  }
}

INSTANTIATE_TEST_SUITE_P(AllD128Variants, IsolatedStages, ::testing::ValuesIn(isolated_cases()),
                         [](const ::testing::TestParamInfo<IsolatedCase>& info) { return info.param.label; });

// The load_only ablation of every wgmma kernel (decode_wgmma_load_only.cu): at every head dim,
// with the real kernel's grid, block, shared memory and CTAs per SM; it streams every tile of
// a ring that wraps and of ragged lengths, then stores zeros and no NaN.
namespace {

// A wgmma case of Hq/Hk 32/8, page 16, ragged lengths (the longest first).
OperatingPoint wgmma_test_op(KvDtype kv, KPath path, TransformMode mode, int head_dim, std::vector<int> lengths,
                             int splits) {
  OperatingPoint op;
  op.batch = static_cast<int>(lengths.size());
  op.q_heads = 32;
  op.kv_heads = 8;
  op.head_dim = head_dim;
  op.page_size = 16;
  op.kv = kv;
  op.k_path = path;
  op.mode = mode;
  op.mma = Mma::wgmma;
  op.context = lengths.front();
  op.context_lengths = std::move(lengths);
  op.splits = splits;
  return op;
}

std::vector<IsolatedCase> wgmma_load_only_cases() {
  std::vector<IsolatedCase> cases;
  for (const auto& [kv, path, mode] : test::kWgmmaVariants) {
    for (int d : {64, 128, 256}) {
      // 128 tiles in one CTA: the ring wraps
      OperatingPoint op = wgmma_test_op(kv, path, mode, d, {8192, 5001, 33}, /*splits=*/1);
      std::ostringstream name;
      name << to_string(kv) << "_" << to_string(path) << "_" << to_string(mode) << "_d" << d;
      cases.push_back({name.str(), op});
      op.splits = 3;  // and the partials of a split grid
      cases.push_back({name.str() + "_splits", op});
      op.page_size = 1;  // the cp.async ring's load_only beside its kernel
      cases.push_back({name.str() + "_splits_page1", op});
    }
  }
  return cases;
}

class WgmmaLoadOnly : public IsolatedStages {};

}  // namespace

TEST_P(WgmmaLoadOnly, RunsAtTheRealKernelsOccupancyAndStoresZeros) {
  const OperatingPoint& op = GetParam().op;
  ASSERT_NO_FATAL_FAILURE(launch_real_kernel(op, /*seed=*/11));
  const Ablation load_only{AblationKind::load_only, -1};
  ASSERT_TRUE(decode_variant_available(args_, load_only)) << "no load_only kernel beside " << real_.name;
  KernelInfo info;
  std::size_t nonzero = 0;
  ASSERT_NO_FATAL_FAILURE(launch_over_poisoned_outputs(args_, op, load_only, stream_, &info, &nonzero));
  EXPECT_EQ(std::string(info.name), std::string(real_.name) + "_load_only");
  expect_real_kernels_geometry(info, real_, real_ctas_per_sm_);
  EXPECT_EQ(nonzero, 0u) << "BF16 zeros expected: no compute ran";
}

INSTANTIATE_TEST_SUITE_P(EveryWgmmaKernel, WgmmaLoadOnly, ::testing::ValuesIn(wgmma_load_only_cases()),
                         [](const ::testing::TestParamInfo<IsolatedCase>& info) { return info.param.label; });

// The compute-side ablations of the wgmma kernels at D = 128: compute_only (WgmmaComputeOnlyTraits)
// and an isolated kernel (WgmmaIsolatedTraits) per per-tile compute stage of the graph, none for
// the loads (the load_only kernel measures the ring whole) or q_quant; none at D = 64 or 256, and
// no compute_only for the mma.sync kernels. The table lookup needs no device.
namespace {

bool wgmma_isolates(Stage s) {
  return s == Stage::k_prep || s == Stage::qk || s == Stage::softmax || s == Stage::v_prep || s == Stage::pv ||
         s == Stage::accum;
}

// A ring that wraps, a ragged last tile, a CTA of one tile, split partials.
OperatingPoint wgmma_isolated_op(KvDtype kv, KPath path, TransformMode mode, int head_dim) {
  return wgmma_test_op(kv, path, mode, head_dim, {4096, 1001, 33}, /*splits=*/2);
}

std::vector<IsolatedCase> wgmma_isolated_cases() {
  std::vector<IsolatedCase> cases;
  for (const auto& [kv, path, mode] : test::kWgmmaVariants) {
    std::ostringstream name;
    name << to_string(kv) << "_" << to_string(path) << "_" << to_string(mode);
    cases.push_back({name.str(), wgmma_isolated_op(kv, path, mode, 128)});
  }
  return cases;
}

class WgmmaIsolatedStages : public IsolatedStages {};

}  // namespace

TEST(WgmmaIsolatedStageTable, EveryComputeStageOfTheGraphAtD128AndNoneElsewhere) {
  for (const auto& [kv, path, mode] : test::kWgmmaVariants) {
    for (int d : {64, 128, 256}) {
      OperatingPoint op = wgmma_isolated_op(kv, path, mode, d);
      const Ablation compute_only{AblationKind::compute_only, -1};
      EXPECT_EQ(decode_variant_available(decode_shape_args(op, op.splits), compute_only), d == 128)
          << to_string(kv) << " " << to_string(path) << " " << to_string(mode) << " D=" << d;
      op.mma = Mma::mma_sync;
      EXPECT_FALSE(decode_variant_available(decode_shape_args(op, op.splits), compute_only)) << "mma.sync";
      op.mma = Mma::wgmma;
      const DecodeArgs args = decode_shape_args(op, op.splits);
      const StageGraph graph = StageGraph::build(op);
      for (int s = 0; s < TP_STAGE_COUNT; ++s) {
        const Stage stage = static_cast<Stage>(s);
        if (stage == Stage::combine) continue;  // the combine kernel alone, for any variant
        SCOPED_TRACE(std::string(to_string(kv)) + " " + std::string(to_string(path)) + " " +
                     std::string(to_string(mode)) + " D=" + std::to_string(d) + " " + std::string(to_string(stage)));
        const bool expected = d == 128 && graph.has_stage(stage) && wgmma_isolates(stage);
        EXPECT_EQ(decode_variant_available(args, Ablation{AblationKind::isolate, s}), expected);
      }
    }
  }
}

TEST_P(WgmmaIsolatedStages, EveryComputeStageAloneAndTheComputeWholeAtTheRealKernelsOccupancy) {
  const OperatingPoint& op = GetParam().op;
  ASSERT_NO_FATAL_FAILURE(launch_real_kernel(op, /*seed=*/13));
  const DecodeArgs& args = args_;
  const KernelInfo& real = real_;
  cudaStream_t stream = stream_;
  const int real_ctas_per_sm = real_ctas_per_sm_;
  const StageGraph graph = StageGraph::build(op);
  int launched = 0;
  for (Stage stage : graph.stages()) {
    if (!wgmma_isolates(stage)) continue;
    SCOPED_TRACE(std::string(to_string(stage)));
    KernelInfo info;
    ASSERT_EQ(launch_decode(args, Ablation{AblationKind::isolate, static_cast<int>(stage)}, stream, &info),
              cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess) << "the isolated kernel did not finish cleanly";
    EXPECT_EQ(std::string(info.name), std::string(real.name) + "_isolate_" + std::string(to_string(stage)));
    expect_real_kernels_geometry(info, real, real_ctas_per_sm);
    ++launched;
  }
  EXPECT_GE(launched, 4) << "qk, softmax, pv and accum at least";

  // compute_only: the real consumer over zeroed slots, so S = 0, P = 1 per token and O = 0: every
  // output written as 0 through the split partials and combine.
  KernelInfo info;
  std::size_t nonzero = 0;
  ASSERT_NO_FATAL_FAILURE(
      launch_over_poisoned_outputs(args, op, Ablation{AblationKind::compute_only, -1}, stream, &info, &nonzero));
  EXPECT_EQ(std::string(info.name), std::string(real.name) + "_compute_only");
  expect_real_kernels_geometry(info, real, real_ctas_per_sm);
  EXPECT_EQ(nonzero, 0u) << "zeros expected: O = 0 over zeroed tiles";
}

INSTANTIATE_TEST_SUITE_P(EveryWgmmaKernel, WgmmaIsolatedStages, ::testing::ValuesIn(wgmma_isolated_cases()),
                         [](const ::testing::TestParamInfo<IsolatedCase>& info) { return info.param.label; });
