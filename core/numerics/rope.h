#pragma once
// Rotary position embedding as the generator and the kernels apply it: NeoX layout,
// channel pairs (i, i + D/2) rotated by position * base^(-2i/D), base 10000.
// Post-RoPE caches hold rotated keys (a constant key bias then turns with position);
// pre-RoPE caches hold unrotated keys and the kernel rotates each reconstructed tile.

#include <vector>

namespace tilepath::numerics {

inline constexpr double kRopeBase = 10000.0;

// theta_i = base^(-2i/D): radians per position of channel pair (i, i + D/2).
double rope_pair_frequency(int pair, int head_dim);

// Rotate one key row in place for token position `position`.
void apply_rope(double* row, int head_dim, int position);
void apply_rope(float* row, int head_dim, int position);

// cos/sin of every (position, pair) for positions [0, positions): [positions][head_dim/2] each.
struct RopeTable {
  int head_dim = 0;
  std::vector<float> cos, sin;
  static RopeTable build(int positions, int head_dim);
  // Rotate a row with the tabulated (float) angles: the kernel in float, the references in double.
  void rotate(float* row, int position) const;
  void rotate(double* row, int position) const;
};

}  // namespace tilepath::numerics
