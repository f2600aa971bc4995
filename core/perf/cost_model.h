#pragma once
// Predicted per-tile stage costs of a variant on a modelled GPU (used by the sim
// backend and by `tilepath predict`). The stage graph + II model turn these into II.

#include <string>

#include "core/operating_point.h"
#include "core/perf/gpu_model.h"
#include "core/stage.h"

namespace tilepath::perf {

struct CostEstimate {
  bool supported = true;
  std::string why_unsupported;   // e.g. "h200 has no BF16xE4M3 MMA; use transform or fp8_qk"
  int tile_tokens = 64;          // KV tokens per tile
  long long tiles_per_cta = 0;   // tiles each CTA walks
  int ctas = 0;                  // batch * kv_heads * splits
  int splits = 1;
  StageCosts per_tile_us;        // per CTA tile, with bandwidth shared by concurrently running CTAs
  double bytes_moved = 0;
  double floor_us = 0;           // bytes_moved / read bandwidth
  double latency_us = 0;         // predicted end-to-end
  std::string notes;
};

CostEstimate estimate_costs(const OperatingPoint& op, const GpuModel& gpu);

}  // namespace tilepath::perf
