#pragma once
// Key distributions for the numerical gate (models/keys/*.json, every parameter with its
// source) and the generator of one (request, kv head) row: the key before RoPE, the
// exact per-channel bias, the values and the group's queries, all BF16-representable
// (the model's own precision). docs/gate.md describes each distribution.

#include <cstdint>
#include <string>
#include <vector>

#include "core/numerics/key_model.h"
#include "core/operating_point.h"

namespace tilepath::quality {

// The parameters and their parser live in core/numerics (the plugins generate inputs from
// the same files); the gate names them here.
using numerics::KeyKind;
using numerics::KeyModel;

// models/keys/<id>.json; throws std::runtime_error naming the file and field, or the known ids.
KeyModel load_key_model(const std::string& id, const std::string& models_dir);
std::vector<KeyModel> load_key_models(const std::string& models_dir);

// One (request, kv head) row of a problem: [tokens][head_dim] keys before RoPE (bias
// included), [head_dim] bias (exact; zeros without one), [tokens][head_dim] values,
// [group][head_dim] queries.
struct GateRow {
  int request = 0, kv_head = 0, tokens = 0, head_dim = 0, rotary_dim = 0;
  std::vector<double> k_pre, bias, v, q;
};

// Generates rows deterministically from (seed, request, kv head).
class KeyGenerator {
 public:
  KeyGenerator(KeyModel model, const OperatingPoint& op, std::uint64_t seed);
  // tokens may exceed the operating point's context (autoregressive steps).
  GateRow row(int request, int kv_head, int tokens) const;
  // The kv head's bias, the same for every request (the model's k_proj bias).
  std::vector<double> bias(int kv_head) const;
  const KeyModel& model() const { return model_; }
  int rotary_dim() const;

 private:
  KeyModel model_;
  OperatingPoint op_;
  std::uint64_t seed_;
  std::vector<double> projection_;  // projected: [head_dim][model_dim] per kv head, concatenated
};

// RoPE on the first rotary_dim channels (NeoX pairs within them, base 10000), exact angles.
void rotate(double* row, int rotary_dim, int position);

}  // namespace tilepath::quality
