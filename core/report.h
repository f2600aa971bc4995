#pragma once
// Flat per-case tables (CSV / Markdown / JSON) over a run store.

#include <string>
#include <vector>

#include "core/store/run_store.h"

namespace tilepath {

// Column names, in order (the CSV header).
const std::vector<std::string>& report_columns();
// One row per case; "" where a backend has no value.
std::vector<std::vector<std::string>> report_rows(const RunStore& store, const CaseFilter& filter = {});
std::string report_csv(const RunStore& store, const CaseFilter& filter = {});
std::string report_markdown(const RunStore& store, const CaseFilter& filter = {});

}  // namespace tilepath
