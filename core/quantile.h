#pragma once
// The q-quantile of a sample by linear interpolation between the two nearest ranks (numpy's
// default, R's type 7): what the model checks report as median and p90. NaN when empty.

#include <algorithm>
#include <cmath>
#include <vector>

namespace tilepath {

inline double quantile(std::vector<double> values, double q) {
  if (values.empty()) return NAN;
  std::sort(values.begin(), values.end());
  const double pos = std::clamp(q, 0.0, 1.0) * double(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(values.size() - 1, lo + 1);
  return values[lo] + (pos - double(lo)) * (values[hi] - values[lo]);
}

}  // namespace tilepath
