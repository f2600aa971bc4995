#include "backends/cuda/sass_opcode_counts.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

#include "backends/cuda/embedded_cubins.h"
#include "core/find_on_path.h"

namespace tilepath::cuda {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string find_cuobjdump() {
  const std::string on_path = find_on_path("cuobjdump");
  if (!on_path.empty()) return on_path;
  return ::access("/usr/local/cuda/bin/cuobjdump", X_OK) == 0 ? "/usr/local/cuda/bin/cuobjdump" : "";
}

// The command's standard output (standard error dropped) and its exit status.
std::string run_command(const std::string& command, int* status) {
  std::string text;
  FILE* pipe = ::popen((command + " 2>/dev/null").c_str(), "r");
  if (!pipe) {
    *status = -1;
    return text;
  }
  char buffer[1 << 16];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) text.append(buffer, n);
  *status = ::pclose(pipe);
  return text;
}

}  // namespace

int SassCounts::count(const std::string& opcode) const {
  const auto it = opcodes.find(opcode);
  return it == opcodes.end() ? 0 : it->second;
}

std::map<std::string, SassCounts> parse_cuobjdump_sass(std::string_view text) {
  std::map<std::string, SassCounts> out;
  SassCounts* current = nullptr;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = trim(text.substr(start, end - start));
    start = end + 1;
    constexpr std::string_view kFunction = "Function : ";
    if (line.substr(0, kFunction.size()) == kFunction) {
      current = &out[std::string(trim(line.substr(kFunction.size())))];
      continue;
    }
    // "/*0010*/   @!P0 HMMA.16816.F32 R4, R8, R12, R4 ;   /* 0x... */": an instruction
    if (!current || line.size() < 5 || line.substr(0, 2) != "/*") continue;
    const std::size_t close = line.find("*/");
    if (close == std::string_view::npos) continue;
    const std::string_view address = line.substr(2, close - 2);
    if (address.empty() || address.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos) continue;
    std::string_view rest = trim(line.substr(close + 2));
    if (rest.empty() || rest.substr(0, 2) == "/*") continue;  // the encoding's second line
    if (rest.front() == '@') {                                // predicate
      const std::size_t space = rest.find(' ');
      if (space == std::string_view::npos) continue;
      rest = trim(rest.substr(space));
    }
    const std::size_t stop = rest.find_first_of(". ;");
    const std::string opcode(rest.substr(0, stop));
    if (opcode.empty()) continue;
    ++current->opcodes[opcode];
    ++current->instructions;
  }
  return out;
}

const SassLookup& sass_of(const std::string& mangled_name) {
  static std::mutex mutex;
  static std::map<std::string, SassLookup> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = cache.find(mangled_name); it != cache.end()) return it->second;
  SassLookup& out = cache[mangled_name];
  static const std::string tool = find_cuobjdump();
  if (tool.empty()) {
    out.error = "cuobjdump not found (PATH, /usr/local/cuda/bin): no SASS opcode counts";
    return out;
  }
  const std::string self = path_of_this_binary();
  out.source = tool + " --dump-sass --function " + mangled_name + " " + self;
  // Mangled names are [A-Za-z0-9_] only: nothing in them needs shell quoting.
  if (mangled_name.empty() ||
      mangled_name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
          std::string::npos) {
    out.error = "not a mangled kernel name: '" + mangled_name + "'";
    return out;
  }
  int status = 0;
  const std::map<std::string, SassCounts> one = parse_cuobjdump_sass(
      run_command("'" + tool + "' --dump-sass --function " + mangled_name + " '" + self + "'", &status));
  const std::map<std::string, SassCounts>* functions = &one;
  if (one.find(mangled_name) == one.end()) {
    // A cuobjdump whose --function does not take mangled names: the whole plugin's SASS,
    // once, and the kernel from there.
    static int all_status = 0;
    static const std::map<std::string, SassCounts> all =
        parse_cuobjdump_sass(run_command("'" + tool + "' --dump-sass '" + self + "'", &all_status));
    functions = &all;
    status = all_status;
    out.source = tool + " --dump-sass " + self;
  }
  if (const auto it = functions->find(mangled_name); it != functions->end()) {
    out.counts = it->second;
  } else {
    out.error = out.source + " exited with " + std::to_string(status) + " and no SASS of that kernel";
  }
  return out;
}

}  // namespace tilepath::cuda
