// JSON from users' files: a nesting limit and one-line errors naming the source.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "core/json_input.h"

using namespace tilepath;

namespace {
std::string nested_arrays(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }
}  // namespace

TEST(JsonInput, NestingUpToTheLimitParses) {
  // depth counts from 0 at the outermost value: kMaxJsonDepth + 1 arrays reach it.
  const nlohmann::json j = parse_json_input(nested_arrays(kMaxJsonDepth + 1), "spec.json");
  EXPECT_TRUE(j.is_array());
  std::istringstream in(R"({"a": {"b": [1, 2, {"c": null}]}})");
  EXPECT_EQ(parse_json_input(in, "model.json")["a"]["b"][1], 2);
}

TEST(JsonInput, DeepNestingIsAOneLineErrorNotACrash) {
  for (int depth : {kMaxJsonDepth + 2, 100000}) {
    try {
      parse_json_input(nested_arrays(depth), "deep.json");
      FAIL() << depth << " levels parsed";
    } catch (const JsonInputError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("deep.json: ", 0), 0u) << what;
      EXPECT_NE(what.find("deeper than 64"), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos);
    }
  }
}

TEST(JsonInput, MalformedJsonNamesTheSourceOnOneLine) {
  try {
    parse_json_input(std::string("{\"a\":\n 1,,}", 11), "--thresholds");
    FAIL();
  } catch (const JsonInputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("--thresholds: malformed JSON", 0), 0u) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_EQ(e.problem.rfind("malformed JSON", 0), 0u);
  }
}
