#pragma once
// The operating-point flags shared by run, predict and graph.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/operating_point.h"

namespace tilepath::cli {

struct OpFlags {
  OperatingPoint defaults;  // values of flags that were not given
  int batch = 0, context = 0, q_heads = 0, kv_heads = 0, head_dim = 0, page_size = 0, splits = 0;
  std::vector<int> context_lengths;
  std::string kv, k_path, mode, cache, k_repr, scale, rope;
  CLI::App* sub = nullptr;
};

// Registers --batch --context --context-lengths --q-heads --kv-heads --head-dim
// --page-size --kv --k-path --mode --cache --k-repr --scale --rope --splits.
// With shape_required the shape flags and --kv must be given (as `run` documents).
void add_op_flags(CLI::App* sub, OpFlags& flags, bool shape_required);

// The operating-point flags the user gave on the command line (e.g. "--batch"), in
// registration order: for commands that also accept another way to pick a case.
std::vector<std::string> given_op_flags(const OpFlags& flags);

// The validated operating point; throws ValidationError naming the flag.
// A missing --k-path / --mode follows the dtype control's default.
OperatingPoint build_operating_point(const OpFlags& flags);

// "k8v8/transform/full B=4 S=1024 Hq/Hk=32/8 D=128 P=16 hbm_cold"
std::string describe_case(const OperatingPoint& op);

}  // namespace tilepath::cli
