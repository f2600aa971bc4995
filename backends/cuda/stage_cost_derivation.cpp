#include "backends/cuda/stage_cost_derivation.h"

#include <algorithm>

#include "backends/cuda/decode_launch.h"

namespace tilepath::cuda {

int tiles_per_cta(const std::vector<int>& lengths, int splits, int tile_tokens) {
  if (lengths.empty() || tile_tokens <= 0) return 0;
  const int max_len = *std::max_element(lengths.begin(), lengths.end());
  const int per_split = std::min(max_len, split_tokens_for(max_len, splits));  // as the kernel splits
  return (per_split + tile_tokens - 1) / tile_tokens;
}

std::vector<int> slope_partner_lengths(const std::vector<int>& lengths, int splits, int tile_tokens) {
  std::vector<int> shorter(lengths.size());
  std::transform(lengths.begin(), lengths.end(), shorter.begin(), [](int len) { return std::max(1, (len + 1) / 2); });
  const int tiles = tiles_per_cta(lengths, splits, tile_tokens);
  if (tiles - tiles_per_cta(shorter, splits, tile_tokens) >= kMinSlopeTiles) return shorter;
  std::vector<int> longer(lengths.size());
  const int extra = kMinSlopeTiles * std::max(1, tile_tokens) * std::max(1, splits);
  std::transform(lengths.begin(), lengths.end(), longer.begin(), [extra](int len) { return len + extra; });
  return longer;
}

// The slope of x over the two contexts, per tile of one CTA and wave; either context may
// be the longer one.
static double slope_per_tile(double at_case, double at_partner, const TileGeometry& g) {
  const int delta_tiles = g.tiles - g.tiles_partner;
  if (delta_tiles == 0 || g.waves <= 0) return NAN;
  return (at_case - at_partner) / (double(g.waves) * delta_tiles);
}

double tile_interval_us(const AblationLatencies& a, const TileGeometry& g) {
  return slope_per_tile(a.full_us, a.full_partner_us, g);
}

double load_only_interval_us(const AblationLatencies& a, const TileGeometry& g) {
  return slope_per_tile(a.load_only_us, a.load_only_partner_us, g);
}

double compute_only_interval_us(const AblationLatencies& a, const TileGeometry& g) {
  return slope_per_tile(a.compute_only_us, a.compute_only_partner_us, g);
}

std::vector<tp_stage_cost> derive_stage_costs(const AblationLatencies& a, const TileGeometry& g) {
  std::vector<tp_stage_cost> out;
  const double per_tile = double(std::max(1, g.waves)) * std::max(1, g.tiles);
  for (int s = 0; s < TP_STAGE_COUNT; ++s) {
    if (std::isfinite(a.removed_us[s])) out.push_back({s, TP_COST_REMOVED, (a.full_us - a.removed_us[s]) / per_tile});
    if (std::isfinite(a.twice_us[s])) out.push_back({s, TP_COST_DOUBLED, (a.twice_us[s] - a.full_us) / per_tile});
    if (s == TP_STAGE_COMBINE) {
      if (std::isfinite(a.isolated_us[s])) out.push_back({s, TP_COST_ISOLATED, a.isolated_us[s]});
    } else if (const double slope = slope_per_tile(a.isolated_us[s], a.isolated_partner_us[s], g);
               std::isfinite(slope)) {
      out.push_back({s, TP_COST_ISOLATED, slope});
    }
  }
  return out;
}

}  // namespace tilepath::cuda
