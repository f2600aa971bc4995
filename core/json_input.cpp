#include "core/json_input.h"

#include <sstream>
#include <stdexcept>

#include "core/printable_text.h"

namespace tilepath {
namespace {

struct TooDeep {};

template <class Input>
nlohmann::json parse_limited(Input&& input, const std::string& source) {
  // The callback sees each value's depth as the parser reaches it; stopping there keeps
  // the parser and everything after it off deep recursion.
  const nlohmann::json::parser_callback_t limit = [](int depth, nlohmann::json::parse_event_t,
                                                     nlohmann::json&) -> bool {
    if (depth > kMaxJsonDepth) throw TooDeep{};
    return true;
  };
  try {
    return nlohmann::json::parse(std::forward<Input>(input), limit);
  } catch (const TooDeep&) {
    throw JsonInputError(source, "JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                                     " levels; allowed: the structure documented for this file (a few levels)");
  } catch (const nlohmann::json::parse_error& e) {
    throw JsonInputError(source, "malformed JSON: " + printable_text(e.what()));
  }
}

}  // namespace

nlohmann::json parse_json_input(std::string_view text, const std::string& source) {
  return parse_limited(text, source);
}

nlohmann::json parse_json_input(std::istream& in, const std::string& source) { return parse_limited(in, source); }

}  // namespace tilepath
