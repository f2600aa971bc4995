// KV capacity and admitted concurrency per cache variant, hand-computed, and the
// attention ITL from the measured latencies.
#include <gtest/gtest.h>

#include <cmath>

#include "core/analysis/capacity.h"
#include "tests/analysis/analysis_test_cases.h"

namespace tilepath::analysis {
namespace {

using analysis_test::CaseBuilder;
using analysis_test::point;

perf::LlmModel tiny_model() {
  perf::LlmModel m;
  m.id = "tiny";
  m.name = "Tiny";
  m.q_heads = 32;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.layers = 2;
  return m;
}

const CapacityRow& row(const CapacityTable& t, const std::string& storage) {
  for (const CapacityRow& r : t.rows)
    if (r.storage == storage) return r;
  throw std::runtime_error("no row " + storage);
}

TEST(Capacity, BytesTokensAndSequencesByHand) {
  const perf::LlmModel m = tiny_model();
  EXPECT_EQ(kv_bytes_per_token_per_layer(m, KvDtype::k8v8), 8 * 128 * 2);
  EXPECT_EQ(kv_bytes_per_token_per_layer(m, KvDtype::k16v8), 8 * 128 * 3);
  EXPECT_EQ(kv_bytes_per_token_per_layer(m, KvDtype::k16v16), 8 * 128 * 4);
  EXPECT_EQ(fixed_bytes_per_layer(m, KvDtype::k8v8, KRepr::plain), 4 * 8 * 2);
  EXPECT_EQ(fixed_bytes_per_layer(m, KvDtype::k8v8, KRepr::prebias), 4 * 8 * 2 + 4 * 8 * 128);
  EXPECT_EQ(fixed_bytes_per_layer(m, KvDtype::k16v16, KRepr::plain), 0);

  CapacityOptions o;
  o.kv_budget_bytes = 64.0 * (1 << 20);  // 64 MiB
  o.context = 1000;                      // 63 pages of 16: 1008 tokens a sequence
  o.page_size = 16;
  const CapacityTable t = capacity_table(m, o, DispatchTable{});
  ASSERT_EQ(t.rows.size(), 6u);  // four dtype controls, and prebias for the two with FP8 K
  const CapacityRow& k8 = row(t, "k8v8");
  EXPECT_EQ(k8.bytes_per_token, 2 * 8 * 128 * 2);  // 4096 B over both layers
  EXPECT_EQ(k8.fixed_bytes, 2 * 64);
  // (64 MiB - 128 B) / (4096 B x 1008 tokens) = 16.25...: 16 sequences.
  EXPECT_EQ(k8.admitted, 16);
  EXPECT_EQ(k8.kv_tokens, std::floor((64.0 * (1 << 20) - 128) / (4096.0 * 16)) * 16);
  const CapacityRow& k16 = row(t, "k16v16");
  EXPECT_EQ(k16.admitted, static_cast<int>(std::floor(64.0 * (1 << 20) / (8192.0 * 1008))));  // 8
  EXPECT_GE(row(t, "k8v8").admitted, row(t, "k16v8").admitted);
  // Nothing measured: no latencies.
  EXPECT_TRUE(std::isnan(k8.attention_itl_us));
  EXPECT_NE(t.latency_note.find("capacity only"), std::string::npos) << t.latency_note;
}

TEST(Capacity, TheAttentionItlIsLayersTimesTheMeasuredLatencyAtTheAdmittedBatch) {
  const perf::LlmModel m = tiny_model();
  // K8/V8 measured at batch 8 and 32, context 4096: 20 us and 80 us (linear in batch).
  const std::vector<CaseSummary> cases = {
      CaseBuilder(1, point(KvDtype::k8v8, KPath::transform, TransformMode::full, 8, 4096)).latency(20),
      CaseBuilder(2, point(KvDtype::k8v8, KPath::transform, TransformMode::full, 32, 4096)).latency(80),
      CaseBuilder(3, point(KvDtype::k8v8, KPath::fp8_qk, TransformMode::k_only, 8, 4096)).latency(30),
      CaseBuilder(4, point(KvDtype::k8v8, KPath::fp8_qk, TransformMode::k_only, 32, 4096)).latency(120)};
  const DispatchTable dispatch = build_dispatch(cases);
  CapacityOptions o;
  o.context = 4096;
  o.page_size = 16;
  // Exactly 16 sequences of K8/V8: 16 x 4096 tokens x 4096 B, plus the scales.
  o.kv_budget_bytes = 16.0 * 4096 * 4096 + 2 * 64;
  const CapacityTable t = capacity_table(m, o, dispatch);
  const CapacityRow& k8 = row(t, "k8v8");
  EXPECT_EQ(k8.admitted, 16);
  EXPECT_EQ(k8.variant, "k8v8/transform/full");  // the faster of the two measured
  EXPECT_NEAR(k8.attention_layer_us, 40, 1e-9);  // log-log between 20 at 8 and 80 at 32
  EXPECT_NEAR(k8.attention_itl_us, 80, 1e-9);    // two layers
  EXPECT_NEAR(k8.tokens_per_s, 16 / 80e-6, 1e-3);
  EXPECT_FALSE(k8.extrapolated);
  EXPECT_TRUE(row(t, "k16v16").variant.empty());  // not measured in this database
}

}  // namespace
}  // namespace tilepath::analysis
