#pragma once
// The operating-point flags shared by run, predict, analyze, graph and attach: one
// per field of the field table (core/op_fields.h), with its help, allowed values
// and default from there.

#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/operating_point.h"

namespace tilepath::cli {

struct OpFlags {
  OperatingPoint defaults;                  // values of flags that were not given
  std::map<std::string, std::string> text;  // field name -> the flag's text as given
  CLI::App* sub = nullptr;
};

// Registers one flag per field (--batch --context --context-lengths --q-heads ...).
// With shape_required the shape flags and --kv must be given (as `run` documents).
void add_op_flags(CLI::App* sub, OpFlags& flags, bool shape_required);

// The operating-point flags the user gave on the command line (e.g. "--batch"), in
// registration order: for commands that also accept another way to pick a case.
std::vector<std::string> given_op_flags(const OpFlags& flags);

// The validated operating point. A flag's own value is checked as it is read (the
// error names the flag); the rules between fields then name the field.
// A missing --k-path / --mode follows the dtype control's default.
OperatingPoint build_operating_point(const OpFlags& flags);

// "k8v8/transform/full B=4 S=1024 Hq/Hk=32/8 D=128 P=16 hbm_cold"
std::string describe_case(const OperatingPoint& op);

}  // namespace tilepath::cli
