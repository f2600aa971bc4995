// The split-KV policy on the GPU: the occupancy it fills is the runtime's for the kernel
// that runs, and the GPU model's launch plan (core/perf/cuda_latency_model.h), given the
// kernel's registers, predicts the same occupancy and split count for every compiled main
// kernel.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/cuda/decode_inputs.h"
#include "backends/cuda/decode_launch.h"
#include "core/perf/cuda_latency_model.h"
#include "tests/gpu/cuda_test_support.h"

using namespace tilepath;
using namespace tilepath::cuda;

namespace {

// Every (dtype, path, mode, K representation, mma, D) the plugin may run; wgmma at 16-token
// pages (TMA) and at 1-token pages (the cp.async ring's kernels).
std::vector<OperatingPoint> every_main_kernel_shape() {
  std::vector<OperatingPoint> ops;
  for (KvDtype kv : {KvDtype::k16v16, KvDtype::k16v8, KvDtype::k8v16, KvDtype::k8v8})
    for (KPath path : {KPath::k16, KPath::transform, KPath::fp8_qk})
      for (TransformMode mode :
           {TransformMode::none, TransformMode::full, TransformMode::k_only, TransformMode::separate_kv})
        for (KRepr repr : {KRepr::plain, KRepr::prebias})
          for (Mma mma : {Mma::mma_sync, Mma::wgmma})
            for (int page : {16, 1}) {
              if (mma == Mma::mma_sync && page == 1) continue;  // the same kernels at every page size
              for (int d : {64, 128, 256}) {
                OperatingPoint op;
                op.kv = kv, op.k_path = path, op.mode = mode, op.k_repr = repr, op.mma = mma, op.head_dim = d;
                op.page_size = page;
                op.batch = 16, op.context = 1024;  // short splits: one kv head per CTA
                if (!op.problems().empty()) continue;
                if (!decode_variant_available(decode_shape_args(op, 1), Ablation{})) continue;
                ops.push_back(op);
              }
            }
  return ops;
}

class SplitPolicy : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = test::no_cuda_device_reason();
    if (!reason.empty()) GTEST_SKIP() << "no CUDA device: " << reason;
    ASSERT_EQ(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  }
  int sm_count_ = 0;
};

}  // namespace

// At B = 16, S = 1024 the wgmma K8/V8 grids at D = 64 pair kv heads (two-head kernels,
// wgmma_kv_heads_per_cta_for); every other shape keeps one kv head per CTA. The plan, given the
// registers of the kernel that runs at its split count, predicts that kernel.
TEST_F(SplitPolicy, ThePlanPredictsTheRuntimeOccupancyOfEveryMainKernel) {
  const std::vector<OperatingPoint> ops = every_main_kernel_shape();
  ASSERT_GE(ops.size(), 40u);
  int two_head_plans = 0;
  for (const OperatingPoint& op : ops) {
    SCOPED_TRACE(op.key());
    KernelResources unsplit;
    ASSERT_EQ(main_kernel_resources(decode_shape_args(op, 1), &unsplit), cudaSuccess);
    const perf::CudaKernelPlan sized = perf::plan_cuda_kernel(op, sm_count_, unsplit.regs_per_thread);
    KernelResources kernel;  // the kernel a launch at the plan's split count runs
    ASSERT_EQ(main_kernel_resources(decode_shape_args(op, sized.splits), &kernel), cudaSuccess);
    EXPECT_GE(kernel.ctas_per_sm, 1);
    EXPECT_GT(kernel.regs_per_thread, 0);
    const perf::CudaKernelPlan plan = perf::plan_cuda_kernel(op, sm_count_, kernel.regs_per_thread);
    EXPECT_EQ(plan.kv_heads_per_cta, sized.kv_heads_per_cta);
    EXPECT_EQ(plan.kv_heads_per_cta, op.mma == Mma::wgmma && op.kv == KvDtype::k8v8 && op.head_dim == 64 ? 2 : 1);
    EXPECT_EQ(plan.ctas_per_sm, kernel.ctas_per_sm) << kernel.regs_per_thread << " registers per thread";
    two_head_plans += plan.kv_heads_per_cta == 2;
  }
  EXPECT_EQ(two_head_plans, 8);  // fp8_qk and transform, full and k_only, on both rings
}

TEST_F(SplitPolicy, ThePlanPredictsTheSplitCountAtEveryBatchAndKvHeadCount) {
  for (const OperatingPoint& base : every_main_kernel_shape())
    for (int batch : {1, 4, 16, 32, 64, 128})
      for (int kv_heads : {1, 2, 8, 32})
        for (int context : {1024, 32768}) {
          OperatingPoint op = base;
          op.batch = batch, op.kv_heads = kv_heads, op.q_heads = kv_heads == 32 ? 32 : kv_heads * 8;
          op.context = context;
          SCOPED_TRACE(op.key());
          KernelResources kernel;
          ASSERT_EQ(main_kernel_resources(decode_shape_args(op, 1), &kernel), cudaSuccess);
          EXPECT_EQ(choose_splits(decode_shape_args(op, 1), context, sm_count_),
                    perf::plan_cuda_kernel(op, sm_count_, kernel.regs_per_thread).splits);
        }
}
