#pragma once
// The one device of the cpu backend: this machine's processor.

#include <cstdint>
#include <string>

namespace tilepath::cpu {

struct CpuDevice {
  std::string name;  // "CPU: <model name from /proc/cpuinfo>"
  int hardware_threads = 1;
  std::uint64_t memory_bytes = 0;  // MemTotal from /proc/meminfo
  std::uint64_t l2_bytes = 0;
  double clock_mhz = 0;
};

CpuDevice probe_cpu_device();

}  // namespace tilepath::cpu
