#pragma once
// Small output helpers shared by the commands.

#include <string>

namespace tilepath::cli {

// "<prefix>: error: <message>" as exactly one line on stderr (newlines folded),
// so scripts and tests can rely on one line per failure.
void print_error(const std::string& prefix, const std::string& message);

// A number for humans: "%.4g", or "-" when not finite.
std::string human_number(double v, const char* format = "%.4g");

}  // namespace tilepath::cli
