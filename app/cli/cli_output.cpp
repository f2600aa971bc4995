#include "app/cli/cli_output.h"

#include <cmath>
#include <cstdio>

namespace tilepath::cli {

void print_error(const std::string& prefix, const std::string& message) {
  // One line, whole: newlines become spaces, other control bytes (a NUL in a JSON key
  // would end the C string) are spelled out.
  std::string line;
  for (char c : prefix + ": error: " + message) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n' || c == '\r' || c == '\t') {
      line += ' ';
    } else if (byte < 0x20 || byte == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      line += escaped;
    } else {
      line += c;
    }
  }
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
