#pragma once
// Runs cases on one AMD GPU: the inputs (the store's cache re-encoded to FNUZ), timed
// launches, the kernel check and gate, stage costs from the ablation kernels, and the
// kernel record of what ran.

#include <string>

#include "backends/abi/tilepath_backend.h"
#include "backends/abi/tilepath_plugin.h"
#include "backends/hip/device_buffer.h"
#include "core/operating_point.h"

namespace tilepath::hip {

// "" when the HIP kernels can run op (device-independent part), else why not, naming the
// field and the allowed values.
std::string unsupported_reason(const OperatingPoint& op);

class DeviceSession {
 public:
  explicit DeviceSession(int device);
  ~DeviceSession();
  DeviceSession(const DeviceSession&) = delete;
  DeviceSession& operator=(const DeviceSession&) = delete;

  void run(const OperatingPoint& op, const tp_run_options& options, tp_result& out, plugin::ResultStorage& storage);

 private:
  int device_;
  int cu_count_ = 0;
  std::string arch_;
  hipStream_t stream_ = nullptr;
  DeviceBuffer flush_;              // written between cold launches: larger than L2 + Infinity Cache
  double read_bandwidth_gbps_ = 0;  // measured once per session (read_bandwidth.h)
};

}  // namespace tilepath::hip
