// The HIP plugin's host-side inputs: small cases are the whole problem, large ones are
// tiled from a pool over distinct device pages, and a checked request rebuilt as a
// one-request problem has the reference of that request (needs no GPU).
#include <gtest/gtest.h>

#include <set>

#include "backends/hip/case_inputs.h"
#include "core/numerics/case_gate.h"
#include "core/numerics/decode_problem.h"

using namespace tilepath;
using namespace tilepath::hip;

namespace {

OperatingPoint op_of(int batch, int context) {
  OperatingPoint op;
  op.batch = batch;
  op.context = context;
  op.q_heads = 8;
  op.kv_heads = 2;
  op.head_dim = 64;
  op.page_size = 16;
  op.kv = KvDtype::k8v8;
  op.k_path = KPath::fp8_qk;
  op.mode = TransformMode::k_only;
  op.validate();
  return op;
}

}  // namespace

TEST(HipCaseInputs, ARequestProblemHasTheReferenceOfThatRequest) {
  const OperatingPoint op = op_of(3, 100);
  const CaseInputs c = make_case_inputs(op, 7, numerics::KeyDistribution::gaussian);
  ASSERT_FALSE(c.tiled);
  for (int b = 0; b < op.batch; ++b) {
    const numerics::DecodeProblem r = request_problem(c, c.source, b);
    EXPECT_EQ(numerics::reference_decode(r, {0}, numerics::QQuantization::e4m3_fnuz),
              numerics::reference_decode(c.source, {b}, numerics::QQuantization::e4m3_fnuz))
        << "request " << b;
  }
}

TEST(HipCaseInputs, LargeCasesAreTiledOverDistinctPages) {
  OperatingPoint op = op_of(40, 300);
  op.context_lengths.assign(op.batch, 300);
  op.context_lengths[5] = 17;  // ragged
  const CaseInputs c = make_case_inputs(op, 3, numerics::KeyDistribution::gaussian, 64.0 * 1024);
  ASSERT_TRUE(c.tiled);
  EXPECT_LE(c.source.op.batch, kPoolRequests);
  EXPECT_LT(c.source.num_pages, c.num_pages);
  std::set<int> used;
  int expected_pages = 0;
  for (int b = 0; b < op.batch; ++b) {
    const int pages = (c.lengths[b] + op.page_size - 1) / op.page_size;
    expected_pages += pages;
    for (int i = 0; i < pages; ++i) {
      const int page = c.page_table[std::size_t(b) * c.max_pages_per_seq + i];
      EXPECT_TRUE(used.insert(page).second) << "page " << page << " used twice";
      EXPECT_LT(c.source_page(page), c.source.num_pages);
    }
  }
  EXPECT_EQ(c.num_pages, expected_pages);
  EXPECT_EQ(int(used.size()), expected_pages);
  EXPECT_EQ(c.q.size(), std::size_t(op.batch) * op.q_heads * op.head_dim);
}

TEST(HipCaseInputs, TiledRequestsGateAgainstTheirFullPrecisionPages) {
  const OperatingPoint op = op_of(40, 300);
  const CaseInputs c = make_case_inputs(op, 5, numerics::KeyDistribution::gaussian, 64.0 * 1024);
  ASSERT_TRUE(c.tiled);
  const numerics::DecodeProblem full = full_precision_source(c);
  ASSERT_EQ(full.page_table, c.source.page_table);
  for (int b : {0, 17, 39}) {
    const numerics::DecodeProblem stored = request_problem(c, c.source, b);
    const numerics::DecodeProblem exact = request_problem(c, full, b);
    ASSERT_EQ(stored.lengths, std::vector<std::int32_t>{300});
    const std::vector<double> ref = numerics::reference_decode(stored, {0}, numerics::QQuantization::e4m3_fnuz);
    const std::vector<float> out(ref.begin(), ref.end());
    const numerics::GateMetrics gate = numerics::case_gate(stored, {0}, out, exact);
    // the FP8 cache's own error against full precision: present, and small
    EXPECT_GT(gate.rel_l2.worst, 0.0) << b;
    EXPECT_LT(gate.rel_l2.worst, 0.2) << b;
  }
}
