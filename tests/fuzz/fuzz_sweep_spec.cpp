// libFuzzer target: a sweep spec from arbitrary bytes. Every bad spec must be refused with
// an exception carrying a message (JsonInputError, ValidationError, ...); a crash, a
// sanitizer report or a hang is the bug. The case cap keeps expansion bounded, as
// `tilepath sweep --max-cases` does.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string_view>

#include "core/json_input.h"
#include "core/sweep.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const nlohmann::json spec =
        tilepath::parse_json_input(std::string_view(reinterpret_cast<const char*>(data), size), "spec");
    const tilepath::SweepSpec expanded = tilepath::parse_sweep_spec(spec, /*max_cases=*/2000);
    (void)expanded;
  } catch (const std::exception&) {
    // a refusal: what the user sees as a one-line error
  }
  return 0;
}
