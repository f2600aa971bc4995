#pragma once
// Hand-made stored cases for the analysis tests: an operating point, its status,
// latency, tile interval, tile size and stage-cost rows, as a sweep would store them.

#include <cstdint>
#include <string>
#include <vector>

#include "core/store/run_store.h"

namespace tilepath::analysis_test {

inline OperatingPoint point(KvDtype kv, KPath path, TransformMode mode, int batch = 64, int context = 4096) {
  OperatingPoint op;
  op.batch = batch;
  op.context = context;
  op.kv = kv;
  op.k_path = path;
  op.mode = mode;
  return op;
}

struct CaseBuilder {
  CaseSummary c;
  CaseBuilder(std::int64_t id, const OperatingPoint& op, std::string backend = "cuda", std::string device = "H200") {
    c.case_id = id;
    c.record.id = id;
    c.record.op = op;
    c.record.status = CaseStatus::ok;
    c.backend = std::move(backend);
    c.device = std::move(device);
  }
  CaseBuilder& measure(const std::string& name, double value) {
    c.record.measurements.push_back({name, value, ""});
    return *this;
  }
  CaseBuilder& latency(double us) { return measure("latency_us", us); }
  CaseBuilder& interval(double us) { return measure("tile_interval_us", us); }
  CaseBuilder& tile_tokens(int tokens) { return measure("tile_tokens", tokens); }
  CaseBuilder& cost(Stage s, CostMethod m, double us) {
    c.record.stage_costs.push_back({s, m, us});
    return *this;
  }
  CaseBuilder& status(CaseStatus s) {
    c.record.status = s;
    return *this;
  }
  CaseBuilder& splits_used(int n) {
    c.record.kernel.splits = n;
    return *this;
  }
  operator CaseSummary() const { return c; }
  const CaseRecord& record() const { return c.record; }
};

}  // namespace tilepath::analysis_test
