#pragma once
// JSON that comes from a user's file or flag (sweep specs, model and key descriptions,
// thresholds), parsed with a nesting limit: nothing a spec needs is deeper than a few
// levels, and a hostile or broken file tens of thousands of levels deep must be a
// one-line error, not a stack overflow in whatever walks the value later.

#include <istream>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tilepath {

inline constexpr int kMaxJsonDepth = 64;

// what(): "<source>: <problem>"; problem alone for callers that word the error themselves.
struct JsonInputError : std::invalid_argument {
  JsonInputError(const std::string& source, std::string problem_text)
      : std::invalid_argument(source + ": " + problem_text), problem(std::move(problem_text)) {}
  std::string problem;
};

// Parses `text`; throws JsonInputError for malformed JSON (the parser's message on one
// line) and for nesting deeper than kMaxJsonDepth.
nlohmann::json parse_json_input(std::string_view text, const std::string& source);
nlohmann::json parse_json_input(std::istream& in, const std::string& source);

}  // namespace tilepath
