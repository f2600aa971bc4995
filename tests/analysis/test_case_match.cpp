// "The stored case for this operating point": equal in every field, ok, preferred
// with stage costs, then newest; controls of the same shape, backend and device.
#include <gtest/gtest.h>

#include <functional>

#include "core/analysis/case_match.h"
#include "tests/analysis/analysis_test_cases.h"

namespace tilepath::analysis {
namespace {

using analysis_test::CaseBuilder;
using analysis_test::point;

const OperatingPoint kOp = point(KvDtype::k8v8, KPath::transform, TransformMode::full);

TEST(CaseMatch, EveryFieldSelects) {
  // Each edit makes a different kernel or a different workload: none of them matches.
  const std::vector<std::pair<const char*, std::function<void(OperatingPoint&)>>> edits = {
      {"batch", [](OperatingPoint& o) { o.batch = 32; }},
      {"context", [](OperatingPoint& o) { o.context = 8192; }},
      {"context_lengths", [](OperatingPoint& o) { o.context_lengths.assign(64, 4096); }},
      {"q_heads", [](OperatingPoint& o) { o.q_heads = 64; }},
      {"kv_heads", [](OperatingPoint& o) { o.kv_heads = 4; }},
      {"head_dim", [](OperatingPoint& o) { o.head_dim = 64; }},
      {"page_size", [](OperatingPoint& o) { o.page_size = 64; }},
      {"kv", [](OperatingPoint& o) { o.kv = KvDtype::k8v16; }},
      {"k_path", [](OperatingPoint& o) { o.k_path = KPath::fp8_qk; }},
      {"mode", [](OperatingPoint& o) { o.mode = TransformMode::k_only; }},
      {"k_repr", [](OperatingPoint& o) { o.k_repr = KRepr::prebias; }},
      {"rope", [](OperatingPoint& o) { o.rope = RopeLayout::pre_rope; }},
      {"scale", [](OperatingPoint& o) { o.scale = ScaleGranularity::per_tensor; }},
      {"cache", [](OperatingPoint& o) { o.cache = CacheState::l2_warm; }},
      {"splits", [](OperatingPoint& o) { o.splits = 4; }},
  };
  const std::vector<CaseSummary> cases = {CaseBuilder(1, kOp)};
  ASSERT_TRUE(find_stored_case(cases, kOp).has_value());
  for (const auto& [field, edit] : edits) {
    OperatingPoint other = kOp;
    edit(other);
    EXPECT_FALSE(find_stored_case(cases, other).has_value()) << field;
  }
}

TEST(CaseMatch, OnlyOkCasesPreferringStageCostsThenTheNewest) {
  std::vector<CaseSummary> cases = {CaseBuilder(1, kOp).status(CaseStatus::failed),
                                    CaseBuilder(2, kOp).cost(Stage::qk, CostMethod::removed, 0.1), CaseBuilder(3, kOp),
                                    CaseBuilder(4, kOp).cost(Stage::pv, CostMethod::removed, 0.1)};
  EXPECT_EQ(find_stored_case(cases, kOp)->case_id, 4);
  cases.pop_back();
  EXPECT_EQ(find_stored_case(cases, kOp)->case_id, 2);  // with costs beats newer without
  cases.erase(cases.begin() + 1);
  EXPECT_EQ(find_stored_case(cases, kOp)->case_id, 3);
  cases.pop_back();
  EXPECT_FALSE(find_stored_case(cases, kOp).has_value());  // only the failed one is left
}

// A list read without stage costs says which cases have them (CaseSummary::has_stage_costs).
TEST(CaseMatch, AListedCaseWithStageCostsNotHeldIsPreferredToo) {
  std::vector<CaseSummary> cases = {CaseBuilder(2, kOp), CaseBuilder(3, kOp)};
  EXPECT_EQ(find_stored_case(cases, kOp)->case_id, 3);
  cases[0].has_stage_costs = true;
  EXPECT_TRUE(has_stage_costs(cases[0]));
  EXPECT_FALSE(has_stage_costs(cases[1]));
  EXPECT_EQ(find_stored_case(cases, kOp)->case_id, 2);
}

TEST(CaseMatch, ScopeSelectsBackendAndDevice) {
  const std::vector<CaseSummary> cases = {CaseBuilder(1, kOp, "cuda", "H200"), CaseBuilder(2, kOp, "cpu", "Xeon"),
                                          CaseBuilder(3, kOp, "cuda", "H100")};
  EXPECT_EQ(find_stored_case(cases, kOp, {"cuda", ""})->case_id, 3);
  EXPECT_EQ(find_stored_case(cases, kOp, {"cuda", "H200"})->case_id, 1);
  EXPECT_EQ(find_stored_case(cases, kOp, {"cpu", ""})->case_id, 2);
  EXPECT_FALSE(find_stored_case(cases, kOp, {"sim", ""}).has_value());
  EXPECT_EQ(scopes_measuring(cases, kOp),
            (std::vector<CaseScope>{{"cuda", "H200"}, {"cpu", "Xeon"}, {"cuda", "H100"}}));
}

TEST(CaseMatch, TheFastestControlOfTheSameShapeBackendAndDevice) {
  const CaseSummary k8v8 = CaseBuilder(1, kOp).latency(130);
  OperatingPoint k16v8_full = point(KvDtype::k16v8, KPath::k16, TransformMode::full);
  OperatingPoint k16v8_sep = point(KvDtype::k16v8, KPath::k16, TransformMode::separate_kv);
  OperatingPoint other_shape = k16v8_full;
  other_shape.page_size = 64;
  OperatingPoint prebias = k16v8_full;
  prebias.kv = KvDtype::k8v8;
  prebias.k_path = KPath::transform;
  prebias.k_repr = KRepr::prebias;
  const std::vector<CaseSummary> cases = {
      k8v8,
      CaseBuilder(2, k16v8_full).latency(185),
      CaseBuilder(3, k16v8_sep).latency(180),
      CaseBuilder(4, k16v8_full, "cpu", "Xeon").latency(1),  // another backend
      CaseBuilder(5, other_shape).latency(2),                // another shape
      CaseBuilder(6, k16v8_full).latency(3).status(CaseStatus::failed),
      CaseBuilder(7, point(KvDtype::k16v16, KPath::k16, TransformMode::none)).latency(244),
      CaseBuilder(8, prebias).latency(100)};
  EXPECT_EQ(fastest_control(cases, k8v8, KvDtype::k16v8)->case_id, 3);
  EXPECT_EQ(fastest_control(cases, k8v8, KvDtype::k16v16)->case_id, 7);
  EXPECT_FALSE(fastest_control(cases, k8v8, KvDtype::k8v16).has_value());
  // A prebias K8/V8 case is not a plain K8/V8 control.
  EXPECT_EQ(fastest_control(cases, cases[1], KvDtype::k8v8)->case_id, 1);
}

// A wgmma K16/V8 case faster than the mma.sync one is not the control of an mma.sync K8/V8
// case: the comparison stays within one kernel structure where it can.
TEST(CaseMatch, TheControlIsOfTheSameMatrixInstructionFamilyWhereThereIsOne) {
  const CaseSummary k8v8 = CaseBuilder(1, kOp).latency(130);
  OperatingPoint k16v8_sync = point(KvDtype::k16v8, KPath::k16, TransformMode::full);
  OperatingPoint k16v8_wgmma = k16v8_sync;
  k16v8_wgmma.mma = Mma::wgmma;
  OperatingPoint k8v8_wgmma = kOp;
  k8v8_wgmma.mma = Mma::wgmma;
  const std::vector<CaseSummary> cases = {k8v8, CaseBuilder(2, k16v8_sync).latency(185),
                                          CaseBuilder(3, k16v8_wgmma).latency(180),
                                          CaseBuilder(4, k8v8_wgmma).latency(120)};
  EXPECT_EQ(fastest_control(cases, k8v8, KvDtype::k16v8)->case_id, 2);
  EXPECT_EQ(fastest_control(cases, cases[3], KvDtype::k16v8)->case_id, 3);
  // No K16/V16 case of either family; no mma.sync K16/V8 for a wgmma case: the other family's.
  EXPECT_FALSE(fastest_control(cases, k8v8, KvDtype::k16v16).has_value());
  const std::vector<CaseSummary> only_sync = {cases[1], cases[3]};
  EXPECT_EQ(fastest_control(only_sync, cases[3], KvDtype::k16v8)->case_id, 2);
}

}  // namespace
}  // namespace tilepath::analysis
