#pragma once
// --seed: a decimal integer 0..2^64-1, refused otherwise (CLI11 alone would take "-1"
// as 2^64-1 and wrap values past 2^64).

#include <cstdint>

#include <CLI/CLI.hpp>

namespace tilepath::cli {

CLI::Option* add_seed_flag(CLI::App* sub, std::uint64_t& seed, const std::string& help, std::uint64_t default_value);

}  // namespace tilepath::cli
