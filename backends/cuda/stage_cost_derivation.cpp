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

std::vector<int> shortened_lengths(const std::vector<int>& lengths) {
  std::vector<int> out(lengths.size());
  std::transform(lengths.begin(), lengths.end(), out.begin(), [](int len) { return std::max(1, (len + 1) / 2); });
  return out;
}

double tile_interval_us(const AblationLatencies& a, const TileGeometry& g) {
  const int delta_tiles = g.tiles - g.tiles_short;
  if (delta_tiles <= 0 || g.waves <= 0) return NAN;
  return (a.full_us - a.full_short_us) / (double(g.waves) * delta_tiles);
}

double load_only_interval_us(const AblationLatencies& a, const TileGeometry& g) {
  const int delta_tiles = g.tiles - g.tiles_short;
  if (delta_tiles <= 0 || g.waves <= 0) return NAN;
  return (a.load_only_us - a.load_only_short_us) / (double(g.waves) * delta_tiles);
}

std::vector<tp_stage_cost> derive_stage_costs(const AblationLatencies& a, const TileGeometry& g) {
  std::vector<tp_stage_cost> out;
  const double per_tile = double(std::max(1, g.waves)) * std::max(1, g.tiles);
  const int delta_tiles = g.tiles - g.tiles_short;
  for (int s = 0; s < TP_STAGE_COUNT; ++s) {
    if (std::isfinite(a.removed_us[s])) out.push_back({s, TP_COST_REMOVED, (a.full_us - a.removed_us[s]) / per_tile});
    if (std::isfinite(a.twice_us[s])) out.push_back({s, TP_COST_DOUBLED, (a.twice_us[s] - a.full_us) / per_tile});
    if (s == TP_STAGE_COMBINE) {
      if (std::isfinite(a.isolated_us[s])) out.push_back({s, TP_COST_ISOLATED, a.isolated_us[s]});
    } else if (std::isfinite(a.isolated_us[s]) && std::isfinite(a.isolated_short_us[s]) && delta_tiles > 0) {
      const double slope = (a.isolated_us[s] - a.isolated_short_us[s]) / (double(std::max(1, g.waves)) * delta_tiles);
      out.push_back({s, TP_COST_ISOLATED, slope});
    }
  }
  return out;
}

}  // namespace tilepath::cuda
