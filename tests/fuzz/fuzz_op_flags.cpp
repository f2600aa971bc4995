// libFuzzer target: the operating-point flags of `tilepath run` (app/cli/op_flags) from
// arbitrary bytes, one command-line argument per line. A bad flag or value must end in a
// CLI11 parse error or a ValidationError naming it; a crash or sanitizer report is the bug.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/cli/op_flags.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args;
  std::string current;
  for (std::size_t i = 0; i < size && args.size() < 64; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\n') {
      args.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (args.size() < 64) args.push_back(current);
  CLI::App app("fuzz");
  tilepath::cli::OpFlags flags;
  tilepath::cli::add_op_flags(&app, flags, /*shape_required=*/false);
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
    app.parse(reversed);
    (void)tilepath::cli::build_operating_point(flags);
  } catch (const CLI::Error&) {
  } catch (const std::exception&) {
  }
  return 0;
}
