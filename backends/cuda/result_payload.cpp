#include "backends/cuda/result_payload.h"

#include <cstdio>

namespace tilepath::cuda {

void ResultPayload::add_metric(const std::string& name, double value, const std::string& unit) {
  tp_metric m{};
  std::snprintf(m.name, sizeof(m.name), "%s", name.c_str());
  std::snprintf(m.unit, sizeof(m.unit), "%s", unit.c_str());
  m.value = value;
  metrics.push_back(m);
}

void ResultPayload::add_artifact(const std::string& name, const std::string& mime, std::string data) {
  artifact_data.push_back(std::move(data));
  tp_artifact a{};
  std::snprintf(a.name, sizeof(a.name), "%s", name.c_str());
  std::snprintf(a.mime, sizeof(a.mime), "%s", mime.c_str());
  artifacts.push_back(a);
}

void ResultPayloads::attach(tp_result& r, std::unique_ptr<ResultPayload> payload) {
  // Data pointers are taken only now: artifact_data no longer reallocates.
  for (std::size_t i = 0; i < payload->artifacts.size(); ++i) {
    payload->artifacts[i].data = reinterpret_cast<const std::uint8_t*>(payload->artifact_data[i].data());
    payload->artifacts[i].size = payload->artifact_data[i].size();
  }
  r.metrics = payload->metrics.empty() ? nullptr : payload->metrics.data();
  r.metric_count = int32_t(payload->metrics.size());
  r.artifacts = payload->artifacts.empty() ? nullptr : payload->artifacts.data();
  r.artifact_count = int32_t(payload->artifacts.size());
  std::lock_guard lock(mutex_);
  const void* key = payload.get();
  if (r.metrics) by_metrics_[r.metrics] = key;
  if (r.artifacts) by_artifacts_[r.artifacts] = key;
  owned_[key] = std::move(payload);
}

void ResultPayloads::release(tp_result& r) {
  std::lock_guard lock(mutex_);
  const void* key = nullptr;
  if (auto it = by_metrics_.find(r.metrics); r.metrics && it != by_metrics_.end()) key = it->second;
  if (auto it = by_artifacts_.find(r.artifacts); !key && r.artifacts && it != by_artifacts_.end()) key = it->second;
  if (key) {
    auto& payload = owned_.at(key);
    if (!payload->metrics.empty()) by_metrics_.erase(payload->metrics.data());
    if (!payload->artifacts.empty()) by_artifacts_.erase(payload->artifacts.data());
    owned_.erase(key);
  }
  r.metrics = nullptr;
  r.metric_count = 0;
  r.artifacts = nullptr;
  r.artifact_count = 0;
}

void ResultPayloads::clear() {
  std::lock_guard lock(mutex_);
  by_metrics_.clear();
  by_artifacts_.clear();
  owned_.clear();
}

}  // namespace tilepath::cuda
