#include "backends/cpu/cpu_device.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

namespace tilepath::cpu {

namespace {

// Value after "key<spaces>:" on the first line starting with key, or "".
std::string proc_field(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    const auto first = value.find_first_not_of(" \t");
    return first == std::string::npos ? "" : value.substr(first);
  }
  return "";
}

}  // namespace

CpuDevice probe_cpu_device() {
  CpuDevice device;
  const std::string model = proc_field("/proc/cpuinfo", "model name");
  device.name = "CPU: " + (model.empty() ? std::string("unknown x86_64") : model);
  device.hardware_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::istringstream mem(proc_field("/proc/meminfo", "MemTotal"));  // "<n> kB"
  std::uint64_t kib = 0;
  if (mem >> kib) device.memory_bytes = kib * 1024;
  const std::string mhz = proc_field("/proc/cpuinfo", "cpu MHz");
  if (!mhz.empty()) device.clock_mhz = std::strtod(mhz.c_str(), nullptr);
#ifdef _SC_LEVEL2_CACHE_SIZE
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l2 > 0) device.l2_bytes = static_cast<std::uint64_t>(l2);
#endif
  return device;
}

}  // namespace tilepath::cpu
