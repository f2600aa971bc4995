#pragma once
// The float originals behind a DecodeProblem, regenerated on demand from the seed.
// Every request's K and V come from their own RNG stream, so any request can be
// rebuilt alone (two-pass quantization and the original-precision reference never
// hold the whole unquantized cache in memory).

#include <cstdint>
#include <vector>

#include "core/numerics/decode_problem.h"

namespace tilepath::numerics::detail {

class ProblemOriginals {
 public:
  ProblemOriginals(const OperatingPoint& op, std::uint64_t seed, KeyDistribution dist);

  const std::vector<int>& lengths() const { return lengths_; }
  // [batch][q_heads][head_dim] BF16 bits
  const std::vector<std::uint16_t>& q() const { return q_; }
  // The constant per-channel key bias the distribution adds: [kv_heads][head_dim] (zeros unless qwen_bias).
  const std::vector<float>& key_bias() const { return key_bias_; }

  // Request b's keys / values, [len][kv_heads][head_dim], BF16-representable floats.
  void keys(int b, std::vector<float>& out) const;
  void values(int b, std::vector<float>& out) const;

 private:
  OperatingPoint op_;
  std::uint64_t seed_;
  KeyDistribution dist_;
  std::vector<int> lengths_;
  std::vector<std::uint16_t> q_;
  std::vector<float> key_bias_;
};

// A standard normal from 32 uniform random bits (tabulated quantile function; exact in
// the outer 2^-16 tails). Monotone in `bits`.
float standard_normal_from_bits(std::uint32_t bits);

// A well-mixed 64-bit seed for stream `stream` of `seed` (splitmix64 finaliser).
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t stream);

}  // namespace tilepath::numerics::detail
