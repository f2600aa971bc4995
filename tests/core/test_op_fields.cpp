// The field table of the operating point: each field once, and JSON, text parsing
// and validation agreeing with it.
#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "core/op_fields.h"

namespace tilepath {
namespace {

std::string error_of(const OpField& f, std::string_view text, const std::string& where = "--flag") {
  OperatingPoint op;
  try {
    f.parse_text(op, text, where);
  } catch (const ValidationError& e) {
    return e.what();
  }
  return "";
}

TEST(OpFields, EveryFieldOnceWithAFlagAJsonKeyAndAnEditor) {
  std::set<std::string> names, flags;
  for (const OpField& f : op_fields()) {
    EXPECT_TRUE(names.insert(std::string(f.name)).second) << f.name;
    EXPECT_TRUE(flags.insert(std::string(f.flag)).second) << f.flag;
    EXPECT_EQ(f.flag.substr(0, 2), "--");
    EXPECT_FALSE(f.label.empty()) << f.name;
    EXPECT_FALSE(f.help.empty()) << f.name;
    EXPECT_FALSE(f.allowed().empty()) << f.name;
  }
  // The JSON of an operating point has exactly the table's keys (ragged lengths when set).
  OperatingPoint op;
  op.batch = 2;
  op.context_lengths = {100, 2000};
  const nlohmann::json j = to_json(op);
  EXPECT_EQ(j.size(), op_fields().size());
  for (const OpField& f : op_fields()) EXPECT_TRUE(j.contains(std::string(f.name))) << f.name;
}

TEST(OpFields, TextToJsonToTextRoundTripsEveryField) {
  OperatingPoint op;
  op.batch = 3;
  op.context = 777;
  op.context_lengths = {5, 6, 7};
  op.q_heads = 64;
  op.kv_heads = 16;
  op.head_dim = 256;
  op.page_size = 64;
  op.kv = KvDtype::k8v16;
  op.k_path = KPath::fp8_qk;
  op.mode = TransformMode::none;
  op.k_repr = KRepr::prebias;
  op.rope = RopeLayout::pre_rope;
  op.scale = ScaleGranularity::per_tensor;
  op.cache = CacheState::l2_warm;
  op.splits = 9;
  op.mma = Mma::wgmma;
  OperatingPoint from_text;
  for (const OpField& f : op_fields()) f.parse_text(from_text, f.get_text(op), std::string(f.flag));
  EXPECT_EQ(from_text, op);
  EXPECT_EQ(operating_point_from_json(to_json(op)), op);
}

// mma is a variant field (a serving engine's choice for the same work) and a sweep axis,
// set by --mma and named with its allowed values when wrong.
TEST(OpFields, MmaIsAVariantChoiceWithItsFlag) {
  const OpField* f = find_op_field("mma");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->flag, "--mma");
  EXPECT_EQ(f->kind, FieldKind::choice);
  EXPECT_TRUE(f->variant);
  EXPECT_TRUE(f->sweep_axis);
  EXPECT_FALSE(f->shape);
  EXPECT_EQ(f->allowed(), "mma_sync|wgmma");
  EXPECT_EQ(f->default_text(), "mma_sync");
  OperatingPoint op;
  f->parse_text(op, "wgmma", "--mma");
  EXPECT_EQ(op.mma, Mma::wgmma);
  EXPECT_EQ(error_of(*f, "wmma", "--mma"), "--mma: unknown value 'wmma'; allowed: mma_sync|wgmma");
}

TEST(OpFields, IntegersAreDecimalOnly) {
  const OpField& batch = *find_op_field("batch");
  OperatingPoint op;
  batch.parse_text(op, "010", "--batch");
  EXPECT_EQ(op.batch, 10);  // decimal, not octal
  batch.parse_text(op, "+7", "--batch");
  EXPECT_EQ(op.batch, 7);
  for (const char* bad : {"0x10", "", "1e3", "12abc", " 5", "4.0", "2147483648"}) {
    const std::string e = error_of(batch, bad, "--batch");
    EXPECT_EQ(e.rfind("--batch: ", 0), 0u) << bad << ": " << e;
    EXPECT_NE(e.find("allowed: 1..4096"), std::string::npos) << bad << ": " << e;
  }
  EXPECT_NE(error_of(batch, "0", "--batch").find("out of range"), std::string::npos);
  EXPECT_NE(error_of(*find_op_field("splits"), "").find("not a decimal integer"), std::string::npos);
}

TEST(OpFields, RangesAndConditionsComeFromTheTable) {
  EXPECT_EQ(error_of(*find_op_field("head_dim"), "96", "head_dim"),
            "head_dim: value 96 is not supported; allowed: 64|128|256");
  EXPECT_NE(error_of(*find_op_field("page_size"), "24").find("1|2|4|8|16|32|64|128|256"), std::string::npos);
  EXPECT_EQ(error_of(*find_op_field("page_size"), "256"), "");
  EXPECT_EQ(error_of(*find_op_field("splits"), "0"), "");
  EXPECT_NE(error_of(*find_op_field("splits"), "257").find("out of range"), std::string::npos);
  // problems() reports the same message for a value set directly.
  OperatingPoint op;
  op.head_dim = 96;
  ASSERT_FALSE(op.problems().empty());
  EXPECT_STREQ(op.problems().front().what(), "head_dim: value 96 is not supported; allowed: 64|128|256");
}

TEST(OpFields, ChoicesOfferWhatTheOtherFieldsAllow) {
  OperatingPoint op;
  op.kv = KvDtype::k16v16;
  EXPECT_EQ(find_op_field("k_path")->valid_names(op), std::vector<std::string>{"k16"});
  op.kv = KvDtype::k8v8;
  op.k_path = KPath::fp8_qk;
  EXPECT_EQ(find_op_field("mode")->valid_names(op), (std::vector<std::string>{"full", "k_only", "separate_kv"}));
  EXPECT_EQ(find_op_field("cache")->valid_names(op), (std::vector<std::string>{"l2_warm", "hbm_cold"}));
  const std::string e = error_of(*find_op_field("kv"), "k4v4", "--kv");
  EXPECT_EQ(e, "--kv: unknown value 'k4v4'; allowed: k16v16|k8v16|k16v8|k8v8");
}

TEST(OpFields, RaggedLengthsNameTheBadEntry) {
  const OpField& f = *find_op_field("context_lengths");
  OperatingPoint op;
  f.parse_text(op, "100,2000,4096", "--context-lengths");
  EXPECT_EQ(op.context_lengths, (std::vector<int>{100, 2000, 4096}));
  EXPECT_EQ(error_of(f, "100,,200", "--context-lengths").rfind("--context-lengths[1]: ", 0), 0u);
  EXPECT_EQ(error_of(f, "100,0", "--context-lengths").rfind("--context-lengths[1]: value 0 is out of range", 0), 0u);
  EXPECT_FALSE(f.sweep_axis);
}

TEST(OpFields, SweepAxesNestDependentChoicesAfterWhatTheyDependOn) {
  const int kv = find_op_field("kv")->sweep_nesting, path = find_op_field("k_path")->sweep_nesting,
            mode = find_op_field("mode")->sweep_nesting;
  EXPECT_LT(kv, path);
  EXPECT_LT(path, mode);
  std::set<int> ranks;
  for (const OpField& f : op_fields()) {
    if (f.sweep_axis) {
      EXPECT_TRUE(ranks.insert(f.sweep_nesting).second) << f.name;
    }
  }
}

TEST(OpFields, ShapeFieldsAreTheOnesRunRequires) {
  std::set<std::string> shape;
  for (const OpField& f : op_fields())
    if (f.shape) shape.insert(std::string(f.name));
  EXPECT_EQ(shape, (std::set<std::string>{"batch", "context", "q_heads", "kv_heads", "head_dim", "page_size", "kv"}));
}

}  // namespace
}  // namespace tilepath
