// The HIP kernels' arithmetic emulated on the host (FNUZ cache, FNUZ Q, K scale after the
// product, FNUZ P for k_only) against the float64 reference over the stored cache.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/numerics/decode_problem.h"
#include "core/numerics/fnuz_decode_emulation.h"
#include "core/numerics/fp8.h"
#include "core/numerics/fp8_fnuz.h"

using namespace tilepath;
using namespace tilepath::numerics;

namespace {

OperatingPoint small_op(KvDtype kv, KPath path, TransformMode mode, int head_dim) {
  OperatingPoint op;
  op.batch = 3;
  op.context = 150;  // not a multiple of the 32-token tile
  op.q_heads = 8;
  op.kv_heads = 2;
  op.head_dim = head_dim;
  op.page_size = 16;
  op.kv = kv;
  op.k_path = path;
  op.mode = mode;
  op.validate();
  return op;
}

double emulated_error(const OperatingPoint& op, bool reencode) {
  const DecodeProblem p = make_problem(op, 11);
  const std::vector<int> requests = {0, 2};
  const std::vector<float> out = emulate_hip_decode(reencode ? to_fnuz_cache(p) : p, requests);
  const std::vector<double> ref = reference_decode(p, requests, QQuantization::e4m3_fnuz);
  return compare(out, ref).rel_l2;
}

struct Variant {
  KvDtype kv;
  KPath path;
  TransformMode mode;
  int head_dim;
};

class FnuzEmulation : public ::testing::TestWithParam<Variant> {};

}  // namespace

TEST_P(FnuzEmulation, MatchesTheReferenceWithinTheVariantsTolerance) {
  const Variant v = GetParam();
  const OperatingPoint op = small_op(v.kv, v.path, v.mode, v.head_dim);
  const double err = emulated_error(op, true);
  EXPECT_LE(err, default_tolerance(op)) << op.variant_label() << " d" << v.head_dim;
}

INSTANTIATE_TEST_SUITE_P(HipVariants, FnuzEmulation,
                         ::testing::Values(Variant{KvDtype::k8v8, KPath::fp8_qk, TransformMode::k_only, 128},
                                           Variant{KvDtype::k8v8, KPath::fp8_qk, TransformMode::full, 64},
                                           Variant{KvDtype::k8v8, KPath::transform, TransformMode::full, 128},
                                           Variant{KvDtype::k8v8, KPath::transform, TransformMode::k_only, 256},
                                           Variant{KvDtype::k8v16, KPath::fp8_qk, TransformMode::none, 128},
                                           Variant{KvDtype::k16v8, KPath::k16, TransformMode::full, 128},
                                           Variant{KvDtype::k16v16, KPath::k16, TransformMode::none, 64}),
                         [](const ::testing::TestParamInfo<Variant>& info) {
                           const Variant& v = info.param;
                           return std::string(to_string(v.kv)) + "_" + std::string(to_string(v.path)) + "_" +
                                  std::string(to_string(v.mode)) + "_d" + std::to_string(v.head_dim);
                         });

TEST(FnuzEmulation, OcpBytesReadAsFnuzWithoutReencodingFailTheCheck) {
  // The same kernels on the OCP bytes and scales as stored: every K and V value is halved,
  // so the logits are halved and the output is halved. The check must see it.
  const OperatingPoint op = small_op(KvDtype::k8v8, KPath::fp8_qk, TransformMode::k_only, 128);
  EXPECT_GT(emulated_error(op, false), 10 * default_tolerance(op));
}

TEST(FnuzEmulation, ReencodedCacheDequantizesToTheSameValues) {
  const OperatingPoint op = small_op(KvDtype::k8v8, KPath::transform, TransformMode::full, 64);
  const DecodeProblem p = make_problem(op, 5);
  const DecodeProblem f = to_fnuz_cache(p);
  ASSERT_EQ(p.k8.size(), f.k8.size());
  ASSERT_EQ(p.k_scale.size(), f.k_scale.size());
  const std::size_t per_head = p.k_scale.size() > 1 ? 1 : 0;
  for (std::size_t i = 0; i < p.k8.size(); ++i) {
    const std::size_t head = per_head * ((i / op.head_dim) % op.kv_heads);
    ASSERT_EQ(e4m3_fnuz_to_float(f.k8[i]) * f.k_scale[head], e4m3_to_float(p.k8[i]) * p.k_scale[head]) << i;
    ASSERT_EQ(e4m3_fnuz_to_float(f.v8[i]) * f.v_scale[head], e4m3_to_float(p.v8[i]) * p.v_scale[head]) << i;
  }
}
