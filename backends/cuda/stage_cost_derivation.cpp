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

std::vector<tp_stage_cost> derive_stage_costs(const AblationLatencies& a, const TileGeometry& g, double k_byte_share) {
  std::vector<tp_stage_cost> out;
  const double per_tile = double(std::max(1, g.waves)) * std::max(1, g.tiles);
  for (int s = 0; s < TP_STAGE_COUNT; ++s) {
    if (std::isfinite(a.removed_us[s])) out.push_back({s, TP_COST_REMOVED, (a.full_us - a.removed_us[s]) / per_tile});
    if (std::isfinite(a.twice_us[s])) out.push_back({s, TP_COST_DOUBLED, (a.twice_us[s] - a.full_us) / per_tile});
  }
  const int delta_tiles = g.tiles - g.tiles_short;
  if (std::isfinite(a.load_only_us) && std::isfinite(a.load_only_short_us) && delta_tiles > 0) {
    const double load_per_tile = (a.load_only_us - a.load_only_short_us) / (double(std::max(1, g.waves)) * delta_tiles);
    out.push_back({TP_STAGE_K_LOAD, TP_COST_ISOLATED, load_per_tile * k_byte_share});
    out.push_back({TP_STAGE_V_LOAD, TP_COST_ISOLATED, load_per_tile * (1.0 - k_byte_share)});
  }
  return out;
}

}  // namespace tilepath::cuda
