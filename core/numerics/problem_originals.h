#pragma once
// The float originals behind a DecodeProblem, regenerated on demand from the seed.
// Every request's K and V come from their own RNG stream, so any request can be
// rebuilt alone (two-pass quantization and the original-precision reference never
// hold the whole unquantized cache in memory).

#include <cstdint>
#include <vector>

#include "core/numerics/decode_problem.h"
#include "core/numerics/key_model.h"
#include "core/numerics/rope.h"

namespace tilepath::numerics::detail {

class ProblemOriginals {
 public:
  // `model` gives dist's parameters (models/keys/<dist>.json as the host passed it); NULL =
  // builtin_key_model(dist). Throws std::invalid_argument when its kind is not dist's.
  ProblemOriginals(const OperatingPoint& op, std::uint64_t seed, KeyDistribution dist, const KeyModel* model = nullptr);

  const std::vector<int>& lengths() const { return lengths_; }
  // [batch][q_heads][head_dim] BF16 bits
  const std::vector<std::uint16_t>& q() const { return q_; }
  // The constant per-channel key bias the distribution adds: [kv_heads][head_dim] (zeros unless qwen_bias).
  const std::vector<float>& key_bias() const { return key_bias_; }

  // Request b's keys as the op's layout caches them, [len][kv_heads][head_dim],
  // BF16-representable floats: post_rope = bf16(RoPE_t(bias + residual)) (the bias turns
  // with position), pre_rope = bias + residual (attention must rotate them: see rope()).
  void keys(int b, std::vector<float>& out) const;
  // Angles for positions [0, max context); attention over pre-RoPE keys rotates with it.
  const RopeTable& rope() const { return rope_; }
  void values(int b, std::vector<float>& out) const;

 private:
  OperatingPoint op_;
  std::uint64_t seed_;
  KeyDistribution dist_;
  KeyModel model_;
  std::vector<int> lengths_;
  std::vector<std::uint16_t> q_;
  std::vector<float> key_bias_;
  RopeTable rope_;
};

// A standard normal from 32 uniform random bits (tabulated quantile function; exact in
// the outer 2^-16 tails). Monotone in `bits`.
float standard_normal_from_bits(std::uint32_t bits);

// A well-mixed 64-bit seed for stream `stream` of `seed` (splitmix64 finaliser).
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t stream);

}  // namespace tilepath::numerics::detail
