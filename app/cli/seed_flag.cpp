#include "app/cli/seed_flag.h"

#include <charconv>
#include <string>

namespace tilepath::cli {

CLI::Option* add_seed_flag(CLI::App* sub, std::uint64_t& seed, const std::string& help, std::uint64_t default_value) {
  seed = default_value;
  CLI::Option* option = sub->add_option_function<std::string>(
      "--seed",
      [&seed](const std::string& text) {
        std::uint64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, value);
        if (text.empty() || ec != std::errc() || ptr != end)
          throw CLI::ValidationError("--seed",
                                     "'" + text + "' is not a decimal integer; allowed: 0..18446744073709551615");
        seed = value;
      },
      help);
  option->default_str(std::to_string(default_value));
  return option;
}

}  // namespace tilepath::cli
