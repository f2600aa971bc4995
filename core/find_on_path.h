#pragma once
// The executable `name` in a directory of $PATH ("" when there is none), for the tools the
// CLI and the plugins call when present (ncu, cuobjdump). Header-only: the plugins include
// it without linking core.

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace tilepath {

inline std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path) return "";
  const std::string dirs = path;
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = dirs.find(':', start);
    const std::string dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const std::string candidate = dir + "/" + name;
    if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}

}  // namespace tilepath
