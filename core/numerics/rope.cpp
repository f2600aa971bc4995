#include "core/numerics/rope.h"

#include <cmath>

namespace tilepath::numerics {

namespace {

double pair_frequency(int pair, int head_dim) { return rope_pair_frequency(pair, head_dim); }

template <class T>
void rotate_pairs(T* row, int head_dim, int position) {
  const int half = head_dim / 2;
  for (int i = 0; i < half; ++i) {
    const double angle = position * pair_frequency(i, head_dim);
    const double c = std::cos(angle), s = std::sin(angle);
    const double x = row[i], y = row[i + half];
    row[i] = static_cast<T>(x * c - y * s);
    row[i + half] = static_cast<T>(x * s + y * c);
  }
}

}  // namespace

double rope_pair_frequency(int pair, int head_dim) { return std::pow(kRopeBase, -2.0 * pair / head_dim); }

void apply_rope(double* row, int head_dim, int position) { rotate_pairs(row, head_dim, position); }
void apply_rope(float* row, int head_dim, int position) { rotate_pairs(row, head_dim, position); }

RopeTable RopeTable::build(int positions, int head_dim) {
  RopeTable t;
  t.head_dim = head_dim;
  const int half = head_dim / 2;
  t.cos.resize(static_cast<std::size_t>(positions) * half);
  t.sin.resize(t.cos.size());
  for (int p = 0; p < positions; ++p) {
    for (int i = 0; i < half; ++i) {
      const double angle = p * pair_frequency(i, head_dim);
      t.cos[static_cast<std::size_t>(p) * half + i] = static_cast<float>(std::cos(angle));
      t.sin[static_cast<std::size_t>(p) * half + i] = static_cast<float>(std::sin(angle));
    }
  }
  return t;
}

namespace {
template <class T>
void rotate_with_table(const RopeTable& t, T* row, int position) {
  const int half = t.head_dim / 2;
  const float* c = &t.cos[static_cast<std::size_t>(position) * half];
  const float* s = &t.sin[static_cast<std::size_t>(position) * half];
  for (int i = 0; i < half; ++i) {
    const T x = row[i], y = row[i + half];
    row[i] = x * c[i] - y * s[i];
    row[i + half] = x * s[i] + y * c[i];
  }
}
}  // namespace

void RopeTable::rotate(float* row, int position) const { rotate_with_table(*this, row, position); }
void RopeTable::rotate(double* row, int position) const { rotate_with_table(*this, row, position); }

}  // namespace tilepath::numerics
