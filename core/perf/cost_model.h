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
  std::string why_unsupported;  // e.g. "h200 has no BF16xE4M3 MMA; use transform or fp8_qk"
  int tile_tokens = 64;         // KV tokens per tile
  long long tiles_per_cta = 0;  // tiles each CTA walks
  int ctas = 0;                 // batch * kv_heads * splits
  int splits = 1;
  StageCosts per_tile_us;  // per CTA tile, with bandwidth shared by concurrently running CTAs
  double bytes_moved = 0;
  double floor_us = 0;    // bytes_moved / read bandwidth
  double latency_us = 0;  // predicted end-to-end
  std::string notes;

  // ---- additions (sim engineer) ----
  double ii_us = 0;                      // steady-state tile interval: max over agents of summed stage costs
  Stage limiting_stage = Stage::k_load;  // largest stage on the busiest agent
  double fill_us = 0;                    // first tile through the pipeline (incl. memory latency)
  double once_per_step_us = 0;           // q_quant + combine
  double launch_overhead_us = 0;
  double tiles_walked = 0;         // tiles one resident CTA slot walks (incl. waves): latency uses this
  double read_bandwidth_gbps = 0;  // the ceiling the floor is computed against (L2 when warm and resident)
  bool served_from_l2 = false;     // l2_warm and the KV cache fits in L2
  int ctas_per_sm = 0;             // CTAs resident on one SM at once
  int concurrent_ctas = 0;         // CTAs resident on the chip at once
  int block_threads = 0;           // modelled CTA: 128 threads per warpgroup role
  int smem_bytes_per_cta = 0;      // modelled shared memory: K/V ring + staged BF16 tiles + Q
  std::string qk_matrix_path;      // "bf16_bf16" or "e4m3_e4m3"
  std::string pv_matrix_path;
};

// Splits chosen when op.splits == 0: enough CTAs to give every SM one, while each
// split keeps at least kMinTilesPerSplit tiles.
int auto_splits(const OperatingPoint& op, const GpuModel& gpu, int tile_tokens = 64);

CostEstimate estimate_costs(const OperatingPoint& op, const GpuModel& gpu);

}  // namespace tilepath::perf
