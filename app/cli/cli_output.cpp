#include "app/cli/cli_output.h"

#include <cmath>
#include <cstdio>

#include "core/printable_text.h"

namespace tilepath::cli {

void print_error(const std::string& prefix, const std::string& message) {
  const std::string line = printable_text(prefix + ": error: " + message);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

std::string human_number(double v, const char* format) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace tilepath::cli
