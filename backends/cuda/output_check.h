#pragma once
// Checks a decode output twice on the same rows (core/numerics): the kernel check
// against a float64 emulation of the kernel's own arithmetic on the stored cache, and the
// numerical gate against float64 attention at full precision on the same inputs.

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/decode_inputs.h"
#include "core/numerics/gate_metrics.h"

namespace tilepath::cuda {

struct OutputCheck {
  double rel_l2 = 0, max_abs = 0, tolerance = 0;
  long long unwritten = 0;  // elements still holding the 0xFFFF poison
  bool all_finite = true;
  bool passed = false;   // every element written, finite, rel_l2 <= tolerance
  int rows_checked = 0;  // (request, kv-head) rows compared with the reference
  int rows_total = 0;
  std::string what_was_checked;  // one line for the case message
  numerics::GateMetrics gate;    // the same rows against full precision (rows_total: every row)
};

// out_bf16: the whole device output [batch][q_heads][head_dim].
// Small cases: every row; tiled cases: the first and last request and the
// longest one, each at a random kv head (drawn from seed).
OutputCheck check_output(const HostDecodeCase& c, const std::vector<std::uint16_t>& out_bf16, std::uint64_t seed);

}  // namespace tilepath::cuda
