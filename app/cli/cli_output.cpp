#include "app/cli/cli_output.h"

#include <cmath>
#include <cstdio>

namespace tilepath::cli {

void print_error(const std::string& prefix, const std::string& message) {
  std::string line = prefix + ": error: " + message;
  for (char& c : line)
    if (c == '\n' || c == '\r') c = ' ';
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

std::string human_number(double v, const char* format) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace tilepath::cli
