#pragma once
// Runs cases on one CUDA device: inputs, correctness, timing (warm / cold),
// tile interval, stage ablations, the read-bandwidth ceiling and kernel
// metadata. Keeps its stream and device buffers between cases.

#include <optional>
#include <string>

#include "backends/abi/tilepath_backend.h"
#include "backends/abi/tilepath_plugin.h"
#include "backends/cuda/decode_inputs.h"
#include "backends/cuda/l2_flush.h"
#include "backends/cuda/read_bandwidth.h"
#include "core/operating_point.h"

namespace tilepath::cuda {

// "" when the device can run op, else why not (names the field and what is allowed).
std::string unsupported_reason(const OperatingPoint& op, int device);

class DeviceSession {
 public:
  explicit DeviceSession(int device);
  ~DeviceSession();
  DeviceSession(const DeviceSession&) = delete;
  DeviceSession& operator=(const DeviceSession&) = delete;

  // Fills out (the host pre-filled NaNs) and storage (stage costs, metrics,
  // artifacts: what out will point to); out.status is TP_OK or
  // TP_ERR_WRONG_RESULT. Throws CudaCallError, UnsupportedCase, plugin::CaseCancelled.
  void run(const OperatingPoint& op, const tp_run_options& options, tp_result& out, plugin::ResultStorage& storage);

  // Measured once per session (per process and device), in the same process as the cases.
  const ReadBandwidth& read_bandwidth();

 private:
  int device_ = 0;
  int sm_count_ = 0;
  cudaStream_t stream_ = nullptr;
  DeviceDecodeInputs inputs_;
  L2Flusher flusher_;
  std::optional<ReadBandwidth> read_bandwidth_;
  DeviceBuffer stream_buffer_;  // read_bandwidth's buffer, kept for the per-case stream of the same bytes
};

}  // namespace tilepath::cuda
