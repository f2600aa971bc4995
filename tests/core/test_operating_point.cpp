// OperatingPoint validation, names, JSON and the C ABI mapping.
#include <gtest/gtest.h>

#include <cstddef>

#include <nlohmann/json.hpp>

#include "core/operating_point.h"

using namespace tilepath;

namespace {

// The first problem's field and message, or "" when valid.
std::string first_problem(const OperatingPoint& op) {
  const auto problems = op.problems();
  return problems.empty() ? "" : problems.front().what();
}
std::string first_field(const OperatingPoint& op) {
  const auto problems = op.problems();
  return problems.empty() ? "" : problems.front().field();
}

}  // namespace

TEST(OperatingPoint, DefaultIsValid) { EXPECT_EQ(first_problem(OperatingPoint{}), ""); }

TEST(OperatingPoint, KvHeadsMustDivideQHeads) {
  OperatingPoint op;
  op.q_heads = 32;
  op.kv_heads = 6;
  EXPECT_EQ(first_field(op), "kv_heads");
  EXPECT_NE(first_problem(op).find("must divide q heads"), std::string::npos);
}

TEST(OperatingPoint, HeadDimNamesAllowedValues) {
  OperatingPoint op;
  op.head_dim = 96;
  EXPECT_EQ(first_field(op), "head_dim");
  EXPECT_NE(first_problem(op).find("allowed: 64|128|256"), std::string::npos) << first_problem(op);
}

TEST(OperatingPoint, PageSizeMustBeAPowerOfTwoUpTo256) {
  OperatingPoint op;
  for (int ok : {1, 2, 16, 256}) {
    op.page_size = ok;
    EXPECT_EQ(first_problem(op), "") << ok;
  }
  for (int bad : {0, 3, 24, 512, -16}) {
    op.page_size = bad;
    EXPECT_EQ(first_field(op), "page_size") << bad;
  }
}

TEST(OperatingPoint, RangesNameTheField) {
  OperatingPoint op;
  op.batch = 0;
  EXPECT_EQ(first_field(op), "batch");
  op = {};
  op.context = 0;
  EXPECT_EQ(first_field(op), "context");
  op = {};
  op.splits = -1;
  EXPECT_EQ(first_field(op), "splits");
}

TEST(OperatingPoint, KPathMustMatchTheDtype) {
  OperatingPoint op;
  op.kv = KvDtype::k16v8;
  op.k_path = KPath::transform;
  op.mode = TransformMode::full;
  EXPECT_EQ(first_field(op), "k_path");
  EXPECT_NE(first_problem(op).find("allowed: k16"), std::string::npos) << first_problem(op);
  op.kv = KvDtype::k8v8;
  op.k_path = KPath::k16;
  EXPECT_EQ(first_field(op), "k_path");
  EXPECT_NE(first_problem(op).find("transform|fp8_qk"), std::string::npos);
}

TEST(OperatingPoint, ModeMustMatchDtypeAndPath) {
  OperatingPoint op;
  op.kv = KvDtype::k16v16;
  op.k_path = KPath::k16;
  op.mode = TransformMode::full;  // nothing to convert
  EXPECT_EQ(first_field(op), "mode");
  EXPECT_NE(first_problem(op).find("allowed: none"), std::string::npos);
  op.kv = KvDtype::k8v16;
  op.k_path = KPath::transform;
  op.mode = TransformMode::k_only;  // k_only needs FP8 V
  EXPECT_EQ(first_field(op), "mode");
  op.mode = TransformMode::separate_kv;
  EXPECT_EQ(first_problem(op), "");
}

TEST(OperatingPoint, ValidCombinationCounts) {
  // 1 (k16v16) + 2 (k16v8) + 3 (k8v16: transform x2, fp8_qk x1) + 6 (k8v8) = 12 variants.
  int count = 0;
  for (auto kv : {KvDtype::k16v16, KvDtype::k8v16, KvDtype::k16v8, KvDtype::k8v8}) {
    for (auto path : valid_k_paths(kv)) count += static_cast<int>(valid_modes(kv, path).size());
  }
  EXPECT_EQ(count, 12);
}

TEST(OperatingPoint, RaggedLengthsMustMatchBatch) {
  OperatingPoint op;
  op.batch = 3;
  op.context_lengths = {1, 17};
  EXPECT_EQ(first_field(op), "context_lengths");
  op.context_lengths = {1, 17, 4095};
  EXPECT_EQ(first_problem(op), "");
  EXPECT_EQ(op.total_tokens(), 1 + 17 + 4095);
  EXPECT_EQ(op.max_context(), 4095);
}

TEST(OperatingPoint, PrebiasNeedsFp8K) {
  OperatingPoint op;
  op.kv = KvDtype::k16v8;
  op.k_path = KPath::k16;
  op.mode = TransformMode::full;
  op.k_repr = KRepr::prebias;
  EXPECT_EQ(first_field(op), "k_repr");
}

TEST(OperatingPoint, Mxfp8NeedsFp8KAndCountsItsBlockScales) {
  OperatingPoint op;
  op.kv = KvDtype::k16v8;
  op.k_path = KPath::k16;
  op.mode = TransformMode::full;
  op.k_repr = KRepr::mxfp8;
  EXPECT_EQ(first_field(op), "k_repr");
  EXPECT_NE(first_problem(op).find("mxfp8 applies only to an FP8 K cache"), std::string::npos) << first_problem(op);
  // K8/V8 MXFP8: one E8M0 byte per 32 elements of K and of V, every token, instead of the
  // two per-head scales.
  OperatingPoint plain;  // K8/V8
  OperatingPoint mx = plain;
  mx.k_repr = KRepr::mxfp8;
  EXPECT_EQ(first_problem(mx), "");
  const double tokens = double(plain.total_tokens());
  EXPECT_DOUBLE_EQ(mx.bytes_moved() - plain.bytes_moved(),
                   tokens * plain.kv_heads * (plain.head_dim / 32.0) * 2 - 2.0 * 4.0 * plain.kv_heads);
}

TEST(OperatingPoint, BytesMovedCountsStorageWidths) {
  OperatingPoint op;  // B=64, S=4096, Hk=8, D=128
  op.kv = KvDtype::k16v16;
  op.k_path = KPath::k16;
  op.mode = TransformMode::none;
  const double kv16 = 64.0 * 4096 * 8 * 128 * 4;
  const double q_o = 2.0 * 64 * 32 * 128 * 2;
  const double pages = 4.0 * 64 * (4096 / 16) + 4.0 * 64;
  EXPECT_DOUBLE_EQ(op.bytes_moved(), kv16 + q_o + pages);
  op.kv = KvDtype::k8v8;
  op.k_path = KPath::transform;
  op.mode = TransformMode::full;
  const double scales = 2.0 * 4 * 8;
  EXPECT_DOUBLE_EQ(op.bytes_moved(), kv16 / 2 + q_o + pages + scales);
}

TEST(OperatingPoint, NamesRoundTripAndUnknownNamesListAllowedValues) {
  for (auto kv : {KvDtype::k16v16, KvDtype::k8v16, KvDtype::k16v8, KvDtype::k8v8}) {
    EXPECT_EQ(parse_kv_dtype(to_string(kv)), kv);
  }
  try {
    parse_kv_dtype("k4v4");
    FAIL();
  } catch (const ValidationError& e) {
    EXPECT_EQ(e.field(), "kv");
    EXPECT_NE(std::string(e.what()).find("k16v16|k8v16|k16v8|k8v8"), std::string::npos);
  }
  EXPECT_THROW(parse_cache_state("warm"), ValidationError);
}

TEST(OperatingPoint, JsonRoundTrip) {
  OperatingPoint op;
  op.batch = 2;
  op.context_lengths = {5, 300};
  op.kv = KvDtype::k8v8;
  op.k_path = KPath::fp8_qk;
  op.mode = TransformMode::k_only;
  op.k_repr = KRepr::prebias;
  op.cache = CacheState::l2_warm;
  op.splits = 4;
  EXPECT_EQ(operating_point_from_json(to_json(op)), op);
}

TEST(OperatingPoint, JsonErrorsNameTheField) {
  try {
    operating_point_from_json(nlohmann::json{{"batch", "64"}});
    FAIL();
  } catch (const ValidationError& e) {
    EXPECT_EQ(e.field(), "batch");
    EXPECT_NE(std::string(e.what()).find("expected an integer"), std::string::npos);
  }
  try {
    operating_point_from_json(nlohmann::json{{"btach", 64}});
    FAIL();
  } catch (const ValidationError& e) {
    EXPECT_EQ(e.field(), "btach");
    EXPECT_NE(std::string(e.what()).find("unknown field"), std::string::npos);
  }
  EXPECT_THROW(operating_point_from_json(nlohmann::json{{"kv", "k9v9"}}), ValidationError);
}

TEST(OperatingPoint, JsonFillsDefaultPathAndModeForTheDtype) {
  const auto op = operating_point_from_json(nlohmann::json{{"kv", "k16v16"}});
  EXPECT_EQ(op.k_path, KPath::k16);
  EXPECT_EQ(op.mode, TransformMode::none);
  EXPECT_EQ(first_problem(op), "");
}

TEST(OperatingPoint, TpCaseRoundTrip) {
  OperatingPoint op;
  op.batch = 2;
  op.context_lengths = {7, 9};
  op.kv = KvDtype::k8v16;
  op.k_path = KPath::fp8_qk;
  op.mode = TransformMode::none;
  const tp_case c = to_tp_case(op, "h200");
  EXPECT_EQ(c.struct_size, sizeof(tp_case));
  EXPECT_STREQ(c.gpu_model, "h200");
  EXPECT_EQ(from_tp_case(c), op);
  tp_case bad = c;
  bad.kv_dtype = 9;
  EXPECT_THROW(from_tp_case(bad), ValidationError);
}

// Stored case keys (cases.case_key) begin with this text: a sweep resumes by it.
TEST(OperatingPoint, KeyTextIsTheStoredOne) {
  OperatingPoint op;
  op.batch = 128;
  op.context = 1024;
  op.k_path = KPath::fp8_qk;
  op.mma = Mma::wgmma;
  EXPECT_EQ(op.key(), "b128_s1024_hq32_hk8_d128_p16_k8v8_fp8_qk_full_plain_post_rope_per_head_hbm_cold_sp0_wgmma");
  op.batch = 2;
  op.context_lengths = {100, 7};
  op.mma = Mma::mma_sync;
  op.splits = 4;
  EXPECT_EQ(op.key(), "b2_s1024_ragged-100-7_hq32_hk8_d128_p16_k8v8_fp8_qk_full_plain_post_rope_per_head_hbm_cold_sp4");
}

TEST(OperatingPoint, KeyDistinguishesEveryField) {
  OperatingPoint a;
  OperatingPoint b = a;
  EXPECT_EQ(a.key(), b.key());
  b.cache = CacheState::l2_warm;
  EXPECT_NE(a.key(), b.key());
  b = a;
  b.splits = 2;
  EXPECT_NE(a.key(), b.key());
  b = a;
  b.page_size = 32;
  EXPECT_NE(a.key(), b.key());
}

TEST(OperatingPoint, MmaDefaultsToMmaSyncAndRoundTripsItsNames) {
  EXPECT_EQ(OperatingPoint{}.mma, Mma::mma_sync);
  for (Mma m : {Mma::mma_sync, Mma::wgmma}) EXPECT_EQ(parse_mma(to_string(m)), m);
  EXPECT_EQ(to_string(Mma::mma_sync), "mma_sync");
  EXPECT_EQ(to_string(Mma::wgmma), "wgmma");
  try {
    parse_mma("hgmma");
    FAIL() << "an unknown family was accepted";
  } catch (const ValidationError& e) {
    EXPECT_EQ(e.field(), "mma");
    EXPECT_EQ(std::string(e.what()), "mma: unknown value 'hgmma'; allowed: mma_sync|wgmma");
  }
  try {
    parse_mma("WGMMA", "--mma");
    FAIL() << "names are spelled exactly";
  } catch (const ValidationError& e) {
    EXPECT_EQ(e.field(), "--mma");
  }
}

TEST(OperatingPoint, MmaTravelsThroughJsonAndTheCAbi) {
  OperatingPoint op;
  op.k_path = KPath::fp8_qk;
  op.mode = TransformMode::k_only;
  op.mma = Mma::wgmma;
  const nlohmann::json j = to_json(op);
  EXPECT_EQ(j.at("mma"), "wgmma");
  EXPECT_EQ(operating_point_from_json(j), op);
  EXPECT_EQ(operating_point_from_json(nlohmann::json::object()).mma, Mma::mma_sync) << "absent = the default";
  try {
    operating_point_from_json(nlohmann::json{{"mma", "mma.sync"}});
    FAIL();
  } catch (const ValidationError& e) {
    EXPECT_EQ(e.field(), "mma");
    EXPECT_NE(std::string(e.what()).find("allowed: mma_sync|wgmma"), std::string::npos) << e.what();
  }
  try {
    operating_point_from_json(nlohmann::json{{"mma", 1}});
    FAIL();
  } catch (const ValidationError& e) {
    EXPECT_EQ(e.field(), "mma");
    EXPECT_NE(std::string(e.what()).find("expected a string"), std::string::npos) << e.what();
  }

  const tp_case c = to_tp_case(op);
  EXPECT_EQ(c.mma, TP_MMA_WGMMA);
  EXPECT_EQ(from_tp_case(c), op);
  tp_case bad = c;
  bad.mma = 2;
  try {
    from_tp_case(bad);
    FAIL() << "an out-of-range mma was accepted";
  } catch (const ValidationError& e) {
    EXPECT_EQ(e.field(), "mma");
    EXPECT_NE(std::string(e.what()).find("mma_sync|wgmma"), std::string::npos) << e.what();
  }
  // A host of ABI 2.4 sends a case that ends before mma: it ran mma_sync, and the bytes
  // past its struct_size are never read.
  tp_case older = c;
  older.struct_size = static_cast<uint32_t>(offsetof(tp_case, mma));
  older.mma = 12345;
  EXPECT_EQ(from_tp_case(older).mma, Mma::mma_sync);
}

TEST(OperatingPoint, MmaIsPartOfTheKeyAndTheVariantLabelOnlyWhenNotTheDefault) {
  OperatingPoint a;
  OperatingPoint b = a;
  b.mma = Mma::wgmma;
  EXPECT_NE(a.key(), b.key());
  // Keys stored before the field existed name their (mma_sync) cases unchanged.
  EXPECT_EQ(a.key().find("mma"), std::string::npos) << a.key();
  EXPECT_EQ(b.key(), a.key() + "_wgmma");
  EXPECT_EQ(a.variant_label(), "k8v8/transform/full");
  EXPECT_EQ(b.variant_label(), "k8v8/transform/full/wgmma");
}
