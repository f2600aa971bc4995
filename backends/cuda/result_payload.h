#pragma once
// Memory behind tp_result::metrics / artifacts: owned by the plugin from
// run_case until release_result (ABI contract).

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/abi/tilepath_backend.h"

namespace tilepath::cuda {

struct ResultPayload {
  std::vector<tp_metric> metrics;
  std::vector<std::string> artifact_data;  // bytes of each artifact
  std::vector<tp_artifact> artifacts;

  void add_metric(const std::string& name, double value, const std::string& unit);
  void add_artifact(const std::string& name, const std::string& mime, std::string data);
};

class ResultPayloads {
 public:
  // Points r's metrics/artifacts at payload and keeps it alive until release(r).
  void attach(tp_result& r, std::unique_ptr<ResultPayload> payload);
  // Idempotent: a result without (or with already released) payload is left alone.
  void release(tp_result& r);
  void clear();

 private:
  std::mutex mutex_;
  std::map<const void*, std::unique_ptr<ResultPayload>> owned_;  // keyed by the payload address
  std::map<const tp_metric*, const void*> by_metrics_;
  std::map<const tp_artifact*, const void*> by_artifacts_;
};

}  // namespace tilepath::cuda
