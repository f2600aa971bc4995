#pragma once
// Flat per-case tables (CSV / Markdown / JSON) over a run store.

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/store/run_store.h"

namespace tilepath {

// Column names, in order (the CSV header).
const std::vector<std::string>& report_columns();
// One row per case, in case order; "" where a backend has no value. The cases are read a
// batch at a time (RunStore::for_each_case_batch): a report of 100k cases never holds them all.
void for_each_report_row(const RunStore& store, const CaseFilter& filter,
                         const std::function<void(const std::vector<std::string>&)>& row);
std::vector<std::vector<std::string>> report_rows(const RunStore& store, const CaseFilter& filter = {});

enum class ReportFormat { markdown, csv };
// The table, written to `out` as it is read.
void write_report(std::FILE* out, const RunStore& store, ReportFormat format, const CaseFilter& filter = {});
std::string report_csv(const RunStore& store, const CaseFilter& filter = {});
std::string report_markdown(const RunStore& store, const CaseFilter& filter = {});

// One row per run instead (report --runs): where a database's cases come from. The runs
// RunStore::run_case_counts admits, their cases counted by status, the command and the notes.
const std::vector<std::string>& run_report_columns();
std::vector<std::vector<std::string>> run_report_rows(const RunStore& store, const CaseFilter& filter = {});
std::string run_report(const RunStore& store, ReportFormat format, const CaseFilter& filter = {});

}  // namespace tilepath
