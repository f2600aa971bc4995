// The CUDA decode kernels against the float64 reference (core/numerics), on
// fresh random inputs for every case: every dtype control, K path and
// transform mode; ragged batches; odd lengths; head dims 64/128/256; page sizes
// 1/16/256; split-KV. The output is poisoned first and every element must be written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <sstream>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/decode_inputs.h"
#include "backends/cuda/decode_launch.h"
#include "core/numerics/fp8.h"
#include "cuda_test_support.h"

using namespace tilepath;
using namespace tilepath::cuda;

namespace {

struct KernelCase {
  std::string label;
  OperatingPoint op;
};
void PrintTo(const KernelCase& c, std::ostream* os) { *os << c.label; }

OperatingPoint base_op(KvDtype kv, KPath path, TransformMode mode) {
  OperatingPoint op;
  op.batch = 4;
  op.context_lengths = {1, 15, 17, 333};  // ragged: 1, page size -1/+1, not a multiple of any tile
  op.context = 333;
  op.q_heads = 32;
  op.kv_heads = 8;
  op.head_dim = 128;
  op.page_size = 16;
  op.kv = kv;
  op.k_path = path;
  op.mode = mode;
  op.splits = 1;
  return op;
}

std::string name_of(const OperatingPoint& op) {
  std::ostringstream s;
  s << to_string(op.kv) << "_" << to_string(op.k_path) << "_" << to_string(op.mode) << "_d" << op.head_dim << "_p"
    << op.page_size << "_hq" << op.q_heads << "_b" << op.batch << "_s" << op.max_context() << "_splits" << op.splits
    << "_" << to_string(op.scale) << "_" << to_string(op.k_repr);
  return s.str();
}

std::vector<KernelCase> all_cases() {
  std::vector<KernelCase> cases;
  const auto add = [&](const OperatingPoint& op) { cases.push_back({name_of(op), op}); };
  for (KvDtype kv : {KvDtype::k16v16, KvDtype::k8v16, KvDtype::k16v8, KvDtype::k8v8}) {
    for (KPath path : valid_k_paths(kv)) {
      for (TransformMode mode : valid_modes(kv, path)) {
        OperatingPoint op = base_op(kv, path, mode);
        add(op);  // ragged batch, odd lengths
        op.scale = ScaleGranularity::per_tensor;
        add(op);
        op = base_op(kv, path, mode);
        for (int d : {64, 256}) {  // every head dim
          op.head_dim = d;
          add(op);
        }
        op = base_op(kv, path, mode);
        op.batch = 2;  // split-KV, fixed and automatic count
        op.context_lengths = {3001, 4096};
        op.splits = 4;
        add(op);
        op.splits = 0;
        add(op);
      }
    }
    const KPath path = default_k_path(kv);
    const TransformMode mode = default_mode(kv, path);
    for (int page : {1, 256}) {  // every page size
      OperatingPoint op = base_op(kv, path, mode);
      op.page_size = page;
      op.context_lengths = {1, page - 1 > 0 ? page - 1 : 2, page + 1, 333};
      add(op);
    }
    for (int d : {64, 256}) {  // the combine's d passes: half a pass (D=64) and two (D=256)
      OperatingPoint op = base_op(kv, path, mode);
      op.head_dim = d;
      op.splits = 3;
      add(op);
    }
    {  // many splits: several batches of combine loads per warp and empty trailing splits
      OperatingPoint op = base_op(kv, path, mode);
      op.batch = 1;
      op.context_lengths = {8000};
      op.splits = 200;  // 64 tokens per split: splits 125..199 see no token
      add(op);
    }
    if (kv == KvDtype::k8v8) {  // long per-CTA ranges: two kv heads per CTA (kv_heads_per_cta_for)
      for (KPath p : valid_k_paths(kv)) {
        for (TransformMode m : valid_modes(kv, p)) {
          OperatingPoint op = base_op(kv, p, m);
          op.batch = 2;
          op.context_lengths = {5000, 8192};  // 8192 tokens per CTA (the longest request): two heads
          op.context = 8192;
          add(op);
          op.splits = 2;  // 4096 tokens per split, and combine
          add(op);
          op.splits = 1;
          op.q_heads = 128;  // GQA 16: two CTAs of 8 query heads per kv-head pair
          add(op);
        }
      }
    }
    OperatingPoint op = base_op(kv, path, mode);  // one request of one token, and GQA 1 and 8
    op.batch = 1;
    op.context_lengths = {1};
    add(op);
    op = base_op(kv, path, mode);
    op.q_heads = 8;
    add(op);
    op.q_heads = 64;
    add(op);
  }
  return cases;
}

class DecodeKernel : public ::testing::TestWithParam<KernelCase> {
 protected:
  void SetUp() override {
    const std::string reason = test::no_cuda_device_reason();
    if (!reason.empty()) GTEST_SKIP() << "no CUDA device: " << reason;
  }
};

// Launches the case twice over (bit-identical repeat), checks every output element was
// written and the output against the float64 reference of host.source; with kernel_name_part,
// that the kernel which ran has it in its name.
void expect_matches_reference(const HostDecodeCase& host, const std::string& label,
                              const char* kernel_name_part = nullptr) {
  const OperatingPoint& op = host.op;

  int sm_count = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  const int max_len = *std::max_element(host.lengths.begin(), host.lengths.end());
  const int splits = op.splits > 0 ? op.splits : choose_splits(decode_shape_args(op, 1), max_len, sm_count);
  ASSERT_GE(splits, 1);

  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  DeviceDecodeInputs inputs;
  DecodeArgs args;
  inputs.upload(host, splits, stream, args);
  ASSERT_TRUE(decode_variant_available(args, Ablation{})) << "no kernel for " << label;

  inputs.poison_output(stream);
  KernelInfo info;
  ASSERT_EQ(launch_decode(args, Ablation{}, stream, &info), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  const std::vector<std::uint16_t> out16 = inputs.download_output(stream);
  // Again, back to back (as timing runs them, each launch overlapping the previous one's
  // tail through programmatic dependent launch): the same output, bit for bit.
  inputs.poison_output(stream);
  ASSERT_EQ(launch_decode(args, Ablation{}, stream, nullptr), cudaSuccess);
  ASSERT_EQ(launch_decode(args, Ablation{}, stream, nullptr), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_TRUE(inputs.download_output(stream) == out16) << "a repeated launch gave a different output";
  cudaStreamDestroy(stream);
  ASSERT_NE(info.name, nullptr);
  EXPECT_GT(info.tile_tokens, 0);
  EXPECT_EQ(std::string(info.name).find("_wgmma") != std::string::npos, op.mma == Mma::wgmma) << info.name;
  if (kernel_name_part) {  // the caller's switch chose the kernel, over the policy
    EXPECT_NE(std::string(info.name).find(kernel_name_part), std::string::npos) << info.name;
  } else if (kv_heads_per_cta_for(args) > 1) {
    EXPECT_NE(std::string(info.name).find("_kvh2"), std::string::npos) << info.name << ": not the two-head kernel";
  }
  if (op.mma == Mma::wgmma && !wgmma_tma_tiles_pages(op.page_size)) {
    EXPECT_NE(std::string(info.name).find("_cp_async"), std::string::npos) << info.name << ": not the cp.async ring";
  }

  const long long unwritten = std::count(out16.begin(), out16.end(), std::uint16_t(0xFFFF));
  EXPECT_EQ(unwritten, 0) << "output elements never written";
  std::vector<float> out(out16.size());
  std::transform(out16.begin(), out16.end(), out.begin(), numerics::bf16_to_float);
  const auto ref = numerics::reference_decode(host.source);
  ASSERT_EQ(ref.size(), out.size());
  const numerics::ErrorStats err = numerics::compare(out, ref);
  EXPECT_TRUE(err.all_finite);
  EXPECT_LE(err.rel_l2, numerics::default_tolerance(op)) << "max_abs " << err.max_abs;
}

// Arguments every check of check_decode_args passes (host buffers: it touches no device).
DecodeArgs launchable_args(const OperatingPoint& op) {
  DecodeArgs args = decode_shape_args(op, 2);
  args.max_pages_per_seq = 1;
  args.split_tokens = 32;
  static std::uint16_t q[2];
  static std::int32_t ints[2];
  alignas(16) static float floats[8];
  alignas(16) static std::uint32_t words[8];
  alignas(8) static std::uint16_t out[4];
  args.q = q;
  args.k_pages = args.v_pages = q;
  args.page_table = args.lengths = ints;
  args.k_scale = args.v_scale = floats;
  args.partial_out = floats;
  args.partial_lse = floats;
  args.out = out;
  args.k_bias = floats;
  args.bias_phase_step = words;
  args.bias_table = words;
  args.bias_step_rotation = floats;
  return args;
}

}  // namespace

// The kernels store two d at once, so launch_decode refuses outputs it cannot store that way.
TEST(DecodeLaunch, RefusesMisalignedOutputs) {
  DecodeArgs args = launchable_args(base_op(KvDtype::k8v8, KPath::transform, TransformMode::full));
  ASSERT_EQ(check_decode_args(args), cudaSuccess);
  args.out += 1;  // 2-byte aligned only
  EXPECT_EQ(check_decode_args(args), cudaErrorInvalidValue);
  args = launchable_args(base_op(KvDtype::k8v8, KPath::transform, TransformMode::full));
  args.partial_out += 1;  // 4-byte aligned only
  EXPECT_EQ(check_decode_args(args), cudaErrorInvalidValue);
}

// A prebias launch reads the bias, its phase steps and two tables (the cos/sin table and the
// tile-to-tile turns, both as 16-byte words): without any of them it is refused.
TEST(DecodeLaunch, RefusesAPrebiasLaunchWithoutItsTables) {
  OperatingPoint op = base_op(KvDtype::k8v8, KPath::transform, TransformMode::full);
  op.k_repr = KRepr::prebias;
  const DecodeArgs all = launchable_args(op);
  ASSERT_EQ(all.k_repr, TP_KREPR_PREBIAS);
  ASSERT_EQ(check_decode_args(all), cudaSuccess);
  const auto refused = [&](auto change) {
    DecodeArgs a = all;
    change(a);
    return check_decode_args(a) == cudaErrorInvalidValue;
  };
  EXPECT_TRUE(refused([](DecodeArgs& a) { a.k_bias = nullptr; }));
  EXPECT_TRUE(refused([](DecodeArgs& a) { a.bias_phase_step = nullptr; }));
  EXPECT_TRUE(refused([](DecodeArgs& a) { a.bias_table = nullptr; }));
  EXPECT_TRUE(refused([](DecodeArgs& a) { a.bias_table += 1; }));  // 4-byte aligned only
  EXPECT_TRUE(refused([](DecodeArgs& a) { a.bias_step_rotation = nullptr; }));
  EXPECT_TRUE(refused([](DecodeArgs& a) { a.bias_step_rotation += 1; }));
  // a plain K cache reads none of them
  DecodeArgs plain = all;
  plain.k_repr = TP_KREPR_PLAIN;
  plain.k_bias = nullptr;
  plain.bias_phase_step = plain.bias_table = nullptr;
  plain.bias_step_rotation = nullptr;
  EXPECT_EQ(check_decode_args(plain), cudaSuccess);
}

TEST_P(DecodeKernel, MatchesFloat64ReferenceOnFreshRandomInputs) {
  const OperatingPoint& op = GetParam().op;
  ASSERT_NO_THROW(op.validate());
  const std::uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  expect_matches_reference(make_host_case(op, seed, /*allow_tiling=*/false), GetParam().label);
}

INSTANTIATE_TEST_SUITE_P(AllVariants, DecodeKernel, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<KernelCase>& info) { return info.param.label; });

// Q far outside the F16 range: the transform path multiplies converted E4M3 K (F16) with
// F16 Q, so each Q row is scaled by a power of two before the conversion (q_to_f16);
// without it these rows would overflow to inf. Every path gets the same check.
class DecodeKernelLargeQ : public DecodeKernel {};

TEST_P(DecodeKernelLargeQ, QElementsBeyondF16RangeMatchTheReference) {
  OperatingPoint op = GetParam().op;
  ASSERT_NO_THROW(op.validate());
  const std::uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  HostDecodeCase host = make_host_case(op, seed, /*allow_tiling=*/false);
  float q_max = 0.0f;
  for (std::uint16_t& q : host.source.q) {  // x 2^16, exact in BF16
    q = numerics::float_to_bf16(numerics::bf16_to_float(q) * 65536.0f);
    q_max = std::max(q_max, std::abs(numerics::bf16_to_float(q)));
  }
  ASSERT_GT(q_max, 65504.0f) << "the case must reach past the largest F16";
  expect_matches_reference(host, GetParam().label);
}

INSTANTIATE_TEST_SUITE_P(
    Paths, DecodeKernelLargeQ,
    ::testing::Values(
        KernelCase{"k8v8_transform_full", base_op(KvDtype::k8v8, KPath::transform, TransformMode::full)},
        KernelCase{"k8v8_transform_k_only", base_op(KvDtype::k8v8, KPath::transform, TransformMode::k_only)},
        KernelCase{"k8v8_transform_separate_kv", base_op(KvDtype::k8v8, KPath::transform, TransformMode::separate_kv)},
        KernelCase{"k8v16_transform_full", base_op(KvDtype::k8v16, KPath::transform, TransformMode::full)},
        KernelCase{"k8v8_fp8_qk_k_only", base_op(KvDtype::k8v8, KPath::fp8_qk, TransformMode::k_only)},
        KernelCase{"k16v8_k16_full", base_op(KvDtype::k16v8, KPath::k16, TransformMode::full)}),
    [](const ::testing::TestParamInfo<KernelCase>& info) { return info.param.label; });

// The wgmma kernels (mma = wgmma: QK on QGMMA (fp8_qk) or HGMMA (transform, k16), PV on QGMMA
// or HGMMA, K and V by TMA, every dtype control) on the same checks: ragged batches and odd lengths (partial last
// tiles), page sizes the TMA boxes tile and, through the cp.async ring, those they do not (1, 2, 4),
// splits, GQA 1/4/8/16, and long ranges that wrap the ring many times.
namespace {

std::vector<KernelCase> wgmma_cases() {
  std::vector<KernelCase> cases;
  const auto add = [&](const std::string& what, OperatingPoint op) {
    op.mma = Mma::wgmma;
    cases.push_back({what + "_" + name_of(op), op});
  };
  for (const auto& [kv, path, mode] : test::kWgmmaVariants) {
    OperatingPoint op = base_op(kv, path, mode);
    add("ragged", op);
    op.scale = ScaleGranularity::per_tensor;
    add("per_tensor", op);
    for (int d : {64, 256}) {  // 64-byte swizzle rows; two 128-byte column blocks per row
      op = base_op(kv, path, mode);
      op.head_dim = d;
      add("head_dim", op);
      op.batch = 2;
      op.context_lengths = {3001, 4096};
      op.splits = 3;
      add("head_dim_splits", op);
    }
    for (int page : {8, 32, 64, 256, 1, 2, 4}) {  // TMA boxes, then the cp.async ring
      op = base_op(kv, path, mode);
      op.page_size = page;
      op.context_lengths = {1, std::max(2, page - 1), page + 1, 333};
      add("page", op);
    }
    op = base_op(kv, path, mode);  // the cp.async ring wrapping many times, split, 1-token pages
    op.page_size = 1;
    op.batch = 2;
    op.context_lengths = {5000, 8192};
    op.context = 8192;
    op.splits = 3;
    add("page1_long_splits", op);
    op = base_op(kv, path, mode);
    op.batch = 2;
    op.context_lengths = {3001, 4096};
    op.splits = 4;
    add("splits", op);
    op.splits = 0;
    add("auto_splits", op);
    op = base_op(kv, path, mode);
    op.batch = 2;
    op.context_lengths = {5000, 8192};  // 128 tiles in one CTA: the 4-slot ring wraps 32 times
    op.context = 8192;
    add("long", op);
    for (int hq : {8, 64, 128}) {  // GQA 1, 8 and 16 (two CTAs of 8 heads per kv head)
      op = base_op(kv, path, mode);
      op.q_heads = hq;
      add("gqa", op);
    }
    op = base_op(kv, path, mode);
    op.batch = 1;
    op.context_lengths = {1};
    add("one_token", op);
  }
  return cases;
}

class WgmmaKernel : public DecodeKernel {};

TEST_P(WgmmaKernel, MatchesFloat64ReferenceOnFreshRandomInputs) {
  const OperatingPoint& op = GetParam().op;
  ASSERT_NO_THROW(op.validate());
  const std::uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  expect_matches_reference(make_host_case(op, seed, /*allow_tiling=*/false), GetParam().label);
}

INSTANTIATE_TEST_SUITE_P(Variants, WgmmaKernel, ::testing::ValuesIn(wgmma_cases()),
                         [](const ::testing::TestParamInfo<KernelCase>& info) { return info.param.label; });

// One of the launcher's A/B switches (environment variables it reads at every launch), set for
// one test only.
class ScopedSwitch {
 public:
  ScopedSwitch(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedSwitch() { unsetenv(name_); }
  ScopedSwitch(const ScopedSwitch&) = delete;
  ScopedSwitch& operator=(const ScopedSwitch&) = delete;

 private:
  const char* name_;
};

// The cases of wgmma_cases() the two-head layout runs: K8/V8 at D = 64 and 128 with an even
// kv-head count; and at D = 64, where one 128-byte ring row holds both heads (one TMA box over
// their adjacent rows, kHeadsPerRow), the page sizes, a single pair of kv heads (one row of
// heads in the tensor map) and a ring that wraps many times.
std::vector<KernelCase> wgmma_two_head_cases() {
  std::vector<KernelCase> cases;
  for (const KernelCase& c : wgmma_cases())
    if (c.op.kv == KvDtype::k8v8 && (c.op.head_dim == 64 || c.op.head_dim == 128) && c.op.kv_heads % 2 == 0)
      cases.push_back(c);
  for (const auto& [kv, path, mode] : test::kWgmmaVariants) {
    if (kv != KvDtype::k8v8) continue;
    const auto add = [&](const std::string& what, OperatingPoint op) {
      op.mma = Mma::wgmma;
      op.head_dim = 64;
      cases.push_back({what + "_" + name_of(op), op});
    };
    for (int page : {8, 64, 256, 1, 4}) {  // TMA boxes over both heads' rows, then the cp.async ring
      OperatingPoint op = base_op(kv, path, mode);
      op.page_size = page;
      op.context_lengths = {1, std::max(2, page - 1), page + 1, 333};
      add("d64_page", op);
    }
    OperatingPoint op = base_op(kv, path, mode);
    op.q_heads = 16;
    op.kv_heads = 2;
    add("d64_one_row", op);
    op = base_op(kv, path, mode);
    op.batch = 2;
    op.context_lengths = {5000, 8192};
    op.context = 8192;
    op.splits = 2;
    add("d64_long", op);
  }
  return cases;
}

// The two-kv-head wgmma kernels (decode_wgmma_two_heads.cu: K8/V8 at D = 64 and 128, forced by
// the A/B switch TILEPATH_CUDA_WGMMA_KV_HEADS_PER_CTA=2) on the same cases, fresh random
// inputs; the kernel that ran must be a two-head one.
class WgmmaTwoHeadKernel : public DecodeKernel {};

TEST_P(WgmmaTwoHeadKernel, MatchesFloat64ReferenceOnFreshRandomInputs) {
  const KernelCase& c = GetParam();
  ASSERT_NO_THROW(c.op.validate());
  const ScopedSwitch two_heads("TILEPATH_CUDA_WGMMA_KV_HEADS_PER_CTA", "2");
  const std::uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  expect_matches_reference(make_host_case(c.op, seed, /*allow_tiling=*/false), c.label, "_kvh2");
}

INSTANTIATE_TEST_SUITE_P(K8V8, WgmmaTwoHeadKernel, ::testing::ValuesIn(wgmma_two_head_cases()),
                         [](const ::testing::TestParamInfo<KernelCase>& info) { return info.param.label; });

// What has no wgmma kernel is refused before any launch. Every page size has one: those the TMA
// boxes do not tile (fewer than 8 token rows) through the cp.async ring, with its
// load_only but no compute-side ablations.
TEST(WgmmaLaunch, RefusesWhatHasNoWgmmaKernel) {
  OperatingPoint op = base_op(KvDtype::k8v8, KPath::fp8_qk, TransformMode::k_only);
  op.mma = Mma::wgmma;
  DecodeArgs args = decode_shape_args(op, 1);
  EXPECT_EQ(args.mma, kMmaWgmma);
  EXPECT_TRUE(decode_variant_available(args, Ablation{}));
  const Ablation load_only{AblationKind::load_only, -1}, compute_only{AblationKind::compute_only, -1};
  EXPECT_TRUE(decode_variant_available(args, compute_only));
  for (int page : {1, 2, 4}) {
    args.page_size = page;
    EXPECT_TRUE(decode_variant_available(args, Ablation{})) << "page " << page;
    EXPECT_TRUE(decode_variant_available(args, load_only)) << "page " << page;
    EXPECT_FALSE(decode_variant_available(args, compute_only)) << "page " << page;
  }
  args.page_size = 16;
  for (int d : {64, 256}) {
    args.head_dim = d;
    EXPECT_TRUE(decode_variant_available(args, Ablation{})) << "D " << d;
  }
  args.head_dim = 96;
  EXPECT_FALSE(decode_variant_available(args, Ablation{}));
  args.head_dim = 128;
  args.kv_dtype = TP_KV_K16V8;
  args.k_path = TP_KPATH_K16;
  args.mode = TP_MODE_FULL;
  EXPECT_TRUE(decode_variant_available(args, Ablation{}));
  args.mode = TP_MODE_SEPARATE_KV;  // no converter warps on wgmma
  EXPECT_FALSE(decode_variant_available(args, Ablation{}));
  args.kv_dtype = TP_KV_K8V8;
  args.k_path = TP_KPATH_FP8_QK;
  args.mode = TP_MODE_SEPARATE_KV;
  EXPECT_FALSE(decode_variant_available(args, Ablation{}));
}

// The cp.async ring at 16-token pages (TILEPATH_CUDA_WGMMA_RING=cp_async, the A/B switch): the
// ragged, split, long and head-dim cases of every wgmma variant (K8/V8 at D = 64 on two kv heads,
// as the policy runs it), fresh random inputs; the kernel that ran must be a cp.async one.
std::vector<KernelCase> wgmma_cp_async_switch_cases() {
  std::vector<KernelCase> cases;
  for (const KernelCase& c : wgmma_cases()) {
    const std::string& l = c.label;
    if (c.op.page_size == 16 && (l.rfind("ragged_", 0) == 0 || l.rfind("splits_", 0) == 0 || l.rfind("long_", 0) == 0 ||
                                 l.rfind("head_dim_", 0) == 0))
      cases.push_back(c);
  }
  return cases;
}

class WgmmaCpAsyncRingKernel : public DecodeKernel {};

TEST_P(WgmmaCpAsyncRingKernel, MatchesFloat64ReferenceOnFreshRandomInputs) {
  const KernelCase& c = GetParam();
  ASSERT_NO_THROW(c.op.validate());
  const ScopedSwitch cp_async("TILEPATH_CUDA_WGMMA_RING", "cp_async");
  const std::uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  expect_matches_reference(make_host_case(c.op, seed, /*allow_tiling=*/false), c.label, "_cp_async");
}

INSTANTIATE_TEST_SUITE_P(Page16, WgmmaCpAsyncRingKernel, ::testing::ValuesIn(wgmma_cp_async_switch_cases()),
                         [](const ::testing::TestParamInfo<KernelCase>& info) { return info.param.label; });

// The transform wgmma kernels multiply F16 Q: Q far past the F16 range must be scaled per
// head first; k16 multiplies BF16 Q as given (as DecodeKernelLargeQ checks for the mma.sync
// kernels).
class WgmmaKernelLargeQ : public DecodeKernel {};

TEST_P(WgmmaKernelLargeQ, QElementsBeyondF16RangeMatchTheReference) {
  const OperatingPoint& op = GetParam().op;
  const std::uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  HostDecodeCase host = make_host_case(op, seed, /*allow_tiling=*/false);
  for (std::uint16_t& q : host.source.q) q = numerics::float_to_bf16(numerics::bf16_to_float(q) * 65536.0f);
  expect_matches_reference(host, GetParam().label);
}

OperatingPoint wgmma_op(KvDtype kv, KPath path, TransformMode mode) {
  OperatingPoint op = base_op(kv, path, mode);
  op.mma = Mma::wgmma;
  return op;
}

INSTANTIATE_TEST_SUITE_P(
    Transform, WgmmaKernelLargeQ,
    ::testing::Values(
        KernelCase{"k8v8_transform_full", wgmma_op(KvDtype::k8v8, KPath::transform, TransformMode::full)},
        KernelCase{"k8v8_transform_k_only", wgmma_op(KvDtype::k8v8, KPath::transform, TransformMode::k_only)},
        KernelCase{"k8v16_transform_full", wgmma_op(KvDtype::k8v16, KPath::transform, TransformMode::full)},
        KernelCase{"k16v8_k16_full", wgmma_op(KvDtype::k16v8, KPath::k16, TransformMode::full)}),
    [](const ::testing::TestParamInfo<KernelCase>& info) { return info.param.label; });

}  // namespace
