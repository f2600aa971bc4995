#pragma once
// Case filters shared by export and report.

#include <string>

#include <CLI/CLI.hpp>

#include "core/store/run_store.h"

namespace tilepath::cli {

struct FilterFlags {
  long long run_id = 0;
  std::string backend, device, kv, k_path, mode, cache, mma, status;
  int batch = 0, context = 0, head_dim = 0;
  CLI::App* sub = nullptr;
};

// --run-id --backend --device --kv --k-path --mode --cache --mma --batch --context --head-dim --status
void add_filter_flags(CLI::App* sub, FilterFlags& flags);

// Enum values are checked (ValidationError names the flag and the allowed values).
CaseFilter build_filter(const FilterFlags& flags);

}  // namespace tilepath::cli
