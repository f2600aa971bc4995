// The gate on a speed case's own inputs: the full-precision problem behind a case and
// case_gate over outputs of known error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "core/numerics/case_gate.h"
#include "core/numerics/decode_problem.h"
#include "core/numerics/fp8.h"

using namespace tilepath;
using namespace tilepath::numerics;

namespace {

OperatingPoint gate_op(KvDtype kv, KPath path) {
  OperatingPoint op;
  op.batch = 3;
  op.context = 384;
  op.context_lengths = {384, 97, 250};
  op.q_heads = 8;
  op.kv_heads = 2;
  op.head_dim = 128;
  op.page_size = 16;
  op.kv = kv;
  op.k_path = path;
  op.mode = default_mode(kv, path);
  return op;
}

// The outputs a kernel that computes its own arithmetic exactly would return: the
// float64 emulation of the stored problem, rounded to float.
std::vector<float> exact_kernel_outputs(const DecodeProblem& p, const std::vector<int>& requests) {
  const std::vector<double> ref = reference_decode(p, requests);
  return std::vector<float>(ref.begin(), ref.end());
}

GateMetrics gate_of(const OperatingPoint& op, KeyDistribution dist, std::uint64_t seed,
                    std::vector<int> requests = {0, 1, 2}) {
  const DecodeProblem stored = make_problem(op, seed, dist);
  const DecodeProblem full = make_full_precision_requests(op, seed, dist, requests);
  GateMetrics m = case_gate(stored, requests, exact_kernel_outputs(stored, requests), full);
  if (std::getenv("TILEPATH_TEST_VERBOSE"))
    std::printf("%s %s: rel_l2 %.4g kl %.4g top8 %.3g\n", op.key().c_str(), std::string(to_string(dist)).c_str(),
                m.rel_l2.worst, m.kl.worst, m.top8.worst);
  return m;
}

}  // namespace

TEST(FullPrecisionProblem, KeepsTheCasesQueryLengthsAndPagesAtBf16) {
  const OperatingPoint op = gate_op(KvDtype::k8v8, KPath::fp8_qk);
  const DecodeProblem stored = make_problem(op, 7);
  const DecodeProblem full = make_full_precision_problem(op, 7);
  EXPECT_EQ(full.op.kv, KvDtype::k16v16);
  EXPECT_EQ(full.op.k_path, KPath::k16);
  EXPECT_EQ(full.op.k_repr, KRepr::plain);
  EXPECT_EQ(full.q, stored.q) << "the query as given, never quantized";
  EXPECT_EQ(full.lengths, stored.lengths);
  EXPECT_EQ(full.page_table, stored.page_table);
  EXPECT_TRUE(full.k8.empty());
  EXPECT_FALSE(full.k16.empty());
}

TEST(FullPrecisionProblem, RequestsAloneMatchTheWholeProblem) {
  const OperatingPoint op = gate_op(KvDtype::k8v8, KPath::transform);
  const std::vector<int> requests = {2, 0};
  const auto whole = reference_decode(make_full_precision_problem(op, 3, KeyDistribution::qwen_bias), requests);
  const auto alone = reference_decode(make_full_precision_requests(op, 3, KeyDistribution::qwen_bias, requests));
  ASSERT_EQ(whole.size(), alone.size());
  for (std::size_t i = 0; i < whole.size(); ++i) EXPECT_NEAR(whole[i], alone[i], 1e-12 * (1 + std::fabs(whole[i])));
}

TEST(CaseGate, ABf16CacheIsFullPrecision) {
  const GateMetrics m = gate_of(gate_op(KvDtype::k16v16, KPath::k16), KeyDistribution::gaussian, 5);
  EXPECT_EQ(m.rows.size(), 3u * 2u) << "every (request, kv head) row";
  EXPECT_LT(m.rel_l2.worst, 1e-6) << "only the float output rounding";
  EXPECT_LT(m.kl.worst, 1e-12);
  EXPECT_EQ(m.top8.worst, 1.0);
}

// The point: fp8_qk's own check rounds Q to E4M3 in its reference too; against
// the BF16 query the same outputs pay Q's quantization as well.
TEST(CaseGate, Fp8QkPaysForQuantizingTheQuery) {
  const GateMetrics transform = gate_of(gate_op(KvDtype::k8v16, KPath::transform), KeyDistribution::gaussian, 5);
  const GateMetrics fp8_qk = gate_of(gate_op(KvDtype::k8v16, KPath::fp8_qk), KeyDistribution::gaussian, 5);
  EXPECT_GT(fp8_qk.rel_l2.worst, 1.3 * transform.rel_l2.worst);
  EXPECT_GT(fp8_qk.kl.worst, 1.5 * transform.kl.worst);
  EXPECT_GT(transform.rel_l2.worst, 1e-3) << "E4M3 keys are not free";
  // Both pass the default gate on Gaussian keys.
  EXPECT_TRUE(judge(transform, GateThresholds{}).passed);
  EXPECT_TRUE(judge(fp8_qk, GateThresholds{}).passed);
}

TEST(CaseGate, QwenBiasKeysFailPlainAndPassWithPrebias) {
  for (RopeLayout rope : {RopeLayout::pre_rope, RopeLayout::post_rope}) {
    OperatingPoint op = gate_op(KvDtype::k8v8, KPath::transform);
    op.rope = rope;
    const GateMetrics plain = gate_of(op, KeyDistribution::qwen_bias, 2);
    op.k_repr = KRepr::prebias;
    const GateMetrics prebias = gate_of(op, KeyDistribution::qwen_bias, 2);
    const std::string layout(to_string(rope));
    EXPECT_FALSE(judge(plain, GateThresholds{}).passed) << layout;
    EXPECT_TRUE(judge(prebias, GateThresholds{}).passed) << layout;
    EXPECT_GT(prebias.top8.worst, plain.top8.worst) << layout;
  }
}

TEST(CaseGate, RowsAreLabelledAndOnlyTheCasesOwnInputsAccepted) {
  const OperatingPoint op = gate_op(KvDtype::k8v8, KPath::fp8_qk);
  const DecodeProblem stored = make_problem(op, 9);
  const DecodeProblem full = make_full_precision_requests(op, 9, KeyDistribution::gaussian, {1});
  const std::vector<float> out = exact_kernel_outputs(stored, {1});
  const GateMetrics whole = case_gate(stored, {1}, out, full);
  ASSERT_EQ(whole.rows.size(), 2u);
  EXPECT_EQ(whole.rows[1].request, 1);
  EXPECT_EQ(whole.rows[1].kv_head, 1);
  EXPECT_GT(whole.rows[1].rel_l2, 0.0);
  EXPECT_THROW(case_gate(stored, {1}, std::vector<float>(3), full), std::invalid_argument);
  // Another seed is another query: not the case's inputs.
  EXPECT_THROW(case_gate(stored, {1}, out, make_full_precision_requests(op, 10, KeyDistribution::gaussian, {1})),
               std::invalid_argument);
}
