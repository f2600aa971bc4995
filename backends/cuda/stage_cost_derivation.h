#pragma once
// Per-tile stage costs and the tile interval from ablation latencies.
//
// Units: microseconds per KV tile on one CTA's timeline. A launch runs `waves`
// rounds of CTAs and each CTA walks `tiles` tiles, so a latency difference
// between two variants is divided by waves x tiles. The tile interval and the
// isolated costs use the slope over two contexts (same grid and splits), which
// removes the fixed launch / q_quant / combine / pipeline-fill time.

#include <array>
#include <cmath>
#include <vector>

#include "backends/abi/tilepath_backend.h"

namespace tilepath::cuda {

struct TileGeometry {
  int tiles = 0;          // tiles per CTA at the case's context
  int tiles_partner = 0;  // tiles per CTA at the other context of the slope
  int waves = 1;
};

// ceil(ceil(max_len / splits) / tile_tokens): the longest CTA's tile count.
int tiles_per_cta(const std::vector<int>& lengths, int splits, int tile_tokens);

// The slope spans at least this many tiles per CTA: over fewer, the pipeline's fill and
// drain, not its steady state, make the difference.
inline constexpr int kMinSlopeTiles = 8;
// The other context of the slope: each length halved (rounded up, at least 1) when that
// leaves kMinSlopeTiles tiles per CTA between the two; otherwise each length longer by
// kMinSlopeTiles tiles of every split (the same grid, more tiles per CTA).
std::vector<int> slope_partner_lengths(const std::vector<int>& lengths, int splits, int tile_tokens);

struct AblationLatencies {
  double full_us = NAN;
  double full_partner_us = NAN;                   // full kernel at the slope's other context
  std::array<double, TP_STAGE_COUNT> removed_us;  // NaN = not measured
  std::array<double, TP_STAGE_COUNT> twice_us;
  double load_only_us = NAN, load_only_partner_us = NAN;
  double compute_only_us = NAN, compute_only_partner_us = NAN;
  // Isolated stage kernels (AblationKind::isolate) at both contexts; combine: the combine
  // kernel alone, at the case's context only.
  std::array<double, TP_STAGE_COUNT> isolated_us, isolated_partner_us;
  AblationLatencies() {
    removed_us.fill(NAN);
    twice_us.fill(NAN);
    isolated_us.fill(NAN);
    isolated_partner_us.fill(NAN);
  }
};

// NaN when the two contexts have the same tile count.
double tile_interval_us(const AblationLatencies& a, const TileGeometry& g);
// The load-only kernel's slope (K and V loads together, no compute), per tile; NaN likewise.
double load_only_interval_us(const AblationLatencies& a, const TileGeometry& g);
// The compute_only kernel's slope (every compute stage, nothing loaded), per tile; NaN likewise.
double compute_only_interval_us(const AblationLatencies& a, const TileGeometry& g);

// The stage costs the ablations measured: removed (full - removed, per tile of the
// case), doubled (twice - full, per tile) and isolated: the slope of the stage's isolated
// kernel over the two contexts, per tile (q_quant runs once per tile there, so its cost is
// one execution); combine's isolated cost is the combine kernel's latency, once per step.
// A stage or method that was not measured has no entry.
std::vector<tp_stage_cost> derive_stage_costs(const AblationLatencies& a, const TileGeometry& g);

}  // namespace tilepath::cuda
