#pragma once
// The host side of one HIP case's inputs, built from core/numerics problems (no HIP here,
// so it is tested on any machine).
//
// Small cases: the whole problem comes from numerics::make_problem. Large ones (where
// generating and checking the whole cache on the host would take longer than the case):
// a "pool" problem of at most kPoolRequests requests and about tile_above_bytes of K+V is
// generated and tiled over the device cache: device page j holds pool page
// (j mod pool pages) and request b reads the pool's query row (b mod pool requests). Every
// request gets its own distinct pages, so the kernel still moves every byte; only the
// values repeat. A checked request is rebuilt as a one-request problem with its pages
// gathered (request_problem), whose float64 reference is that request's output.

#include <cstdint>
#include <vector>

#include "core/numerics/decode_problem.h"
#include "core/operating_point.h"

namespace tilepath::hip {

// K+V bytes of the host problem above which the case is tiled from a pool.
inline constexpr double kTileAboveHostBytes = 64.0 * (1 << 20);
inline constexpr int kPoolRequests = 16;

struct CaseInputs {
  OperatingPoint op;
  std::uint64_t seed = 0;
  numerics::KeyDistribution keys = numerics::KeyDistribution::gaussian;
  bool tiled = false;
  numerics::DecodeProblem source;  // OCP cache: the whole problem, or the pool when tiled
  int num_pages = 0;               // pages of the device cache
  int max_pages_per_seq = 0;
  std::vector<std::int32_t> page_table;  // [batch][max_pages_per_seq] device page ids
  std::vector<std::int32_t> lengths;     // [batch]
  std::vector<std::uint16_t> q;          // [batch][q_heads][head_dim] BF16

  // The source page a device page holds.
  int source_page(int device_page) const { return tiled ? device_page % source.num_pages : device_page; }
};

CaseInputs make_case_inputs(const OperatingPoint& op, std::uint64_t seed, numerics::KeyDistribution keys,
                            double tile_above_bytes = kTileAboveHostBytes);

// Request b of the case as a one-request problem, its pages gathered from `source` (the
// case's source, or a problem laid out like it: the full-precision one of the same seed).
numerics::DecodeProblem request_problem(const CaseInputs& c, const numerics::DecodeProblem& source, int b);

// The full-precision problem laid out like c.source (same seed, pages and query).
numerics::DecodeProblem full_precision_source(const CaseInputs& c);

}  // namespace tilepath::hip
