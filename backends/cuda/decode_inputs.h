#pragma once
// Inputs of one decode step on the device, built from core/numerics problems.
//
// Small cases: the whole problem comes from numerics::make_problem and the
// float64 reference checks every output row.
// Large cases (where generating and checking everything on the host would take
// seconds): a smaller random "pool" problem is generated and TILED over the
// device cache: device page j holds pool page (j mod pool_pages), request b
// uses the pool's query row (b mod pool_batch). Every page id in the page table
// is distinct, so the kernel still moves every byte; only the values repeat.
// Sampled (request, kv-head) rows are then checked against the float64
// reference of an equivalent one-request problem (reference_problem_for_row).

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/decode_launch.h"
#include "backends/cuda/device_buffer.h"
#include "core/numerics/decode_problem.h"
#include "core/operating_point.h"

namespace tilepath::cuda {

struct HostDecodeCase {
  OperatingPoint op;
  std::uint64_t seed = 0;  // make_problem's, so the full-precision inputs can be rebuilt
  numerics::KeyDistribution keys = numerics::KeyDistribution::gaussian;
  bool tiled = false;
  numerics::DecodeProblem source;  // the whole problem, or the pool when tiled
  int num_pages = 0;               // pages on the device
  int max_pages_per_seq = 0;
  std::vector<std::int32_t> page_table;  // [batch][max_pages_per_seq] device page ids
  std::vector<std::int32_t> lengths;     // [batch]
};

// Host bytes (K+V) above which the case is tiled from a pool.
// Kept small: a sweep generates one problem per case, and host time is device time.
inline constexpr double kTileAboveHostBytes = 8.0 * (1 << 20);
// Requests in the pool: make_problem generates requests in parallel, so the pool
// has several short ones rather than one long one.
inline constexpr int kPoolRequests = 16;
// Reference work (tokens x q_heads x head_dim) above which only sampled rows are checked.
inline constexpr double kFullCheckMaxWork = 1.5e8;

// The shape and variant fields of the launch arguments (no pointers); splits >= 1.
DecodeArgs decode_shape_args(const OperatingPoint& op, int splits);

// allow_tiling=false forces the whole problem on the host (--save-tensors needs
// the exact inputs of the output it writes).
HostDecodeCase make_host_case(const OperatingPoint& op, std::uint64_t seed, bool allow_tiling = true,
                              double tile_above_host_bytes = kTileAboveHostBytes,
                              numerics::KeyDistribution keys = numerics::KeyDistribution::gaussian);

// The same case at full precision: the unquantized BF16 inputs of the same seed in the
// same pages (and the same tiling), read with the BF16 query (numerics::full_precision_op).
HostDecodeCase full_precision_case(const HostDecodeCase& c);

// A one-request, one-kv-head problem equal to row (batch b, kv head h) of the
// device problem (its q heads are h*G .. h*G+G-1): its reference_decode is the
// reference of those output rows.
numerics::DecodeProblem reference_problem_for_row(const HostDecodeCase& c, int b, int kv_head);

// Device memory for a case; grows and is reused across cases.
class DeviceDecodeInputs {
 public:
  // Upload c (replicating the pool when tiled) and fill args' pointers and shape.
  void upload(const HostDecodeCase& c, int splits, cudaStream_t stream, DecodeArgs& args);
  // Replace the per-request lengths (same page table), e.g. for the tile-interval run;
  // args' split ranges follow the new longest request.
  void set_lengths(const std::vector<std::int32_t>& lengths, cudaStream_t stream, DecodeArgs& args);
  // Fill the output with 0xFFFF (a BF16 NaN) so unwritten elements are visible.
  void poison_output(cudaStream_t stream);
  std::vector<std::uint16_t> download_output(cudaStream_t stream);
  double device_bytes() const;

 private:
  DeviceBuffer q_, k_pages_, v_pages_, page_table_, lengths_, k_scale_, v_scale_, out_;
  DeviceBuffer partial_out_, partial_lse_;
  DeviceBuffer k_bias_, bias_phase_step_, bias_table_, bias_step_rotation_;  // prebias only
  std::size_t out_elems_ = 0;
};

}  // namespace tilepath::cuda
