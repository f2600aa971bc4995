#include "core/run/worker_protocol.h"

#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include "core/sweep.h"

namespace tilepath {
namespace {

using nlohmann::json;

json parse_line(const std::string& line, const char* who) {
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) throw std::runtime_error(std::string(who) + ": not a JSON object: " + line.substr(0, 200));
  return j;
}

int case_of(const json& j, const std::string& line) {
  if (!j.contains("case") || !j["case"].is_number_integer())
    throw std::runtime_error("worker protocol: no integer \"case\" in " + line.substr(0, 200));
  return j["case"].get<int>();
}

// The settings as to_json(RunSettings) wrote them.
RunSettings settings_of(const json& j) {
  if (!j.is_object()) throw std::runtime_error("worker request: \"settings\" must be an object, got " + j.dump());
  RunSettings settings;
  json rest = j;
  if (const auto thresholds = rest.find("gate_thresholds"); thresholds != rest.end()) {
    try {
      settings.gate_thresholds = numerics::GateThresholds::from_json(*thresholds);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(std::string("worker request: settings.gate_thresholds: ") + e.what());
    }
    rest.erase(thresholds);
  }
  try {
    parse_run_settings(rest, settings);
  } catch (const ValidationError& e) {
    throw std::runtime_error(std::string("worker request: ") + e.what());
  }
  return settings;
}

}  // namespace

bool write_all(int fd, const std::string& line) {
  std::size_t at = 0;
  while (at < line.size()) {
    const ssize_t n = write(fd, line.data() + at, line.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    at += static_cast<std::size_t>(n);
  }
  return true;
}

std::string encode(const WorkerRequest& r) {
  const json j = {{"case", r.case_index},
                  {"key", r.key},
                  {"run", r.run_id},
                  {"op", to_json(r.op)},
                  {"settings", to_json(r.settings)}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string encode(const WorkerReply& r) {
  json j;
  switch (r.kind) {
    case WorkerReply::Kind::ready:
      j = {{"ready", true}};
      break;
    case WorkerReply::Kind::progress:
      j = {{"case", r.case_index}, {"progress", r.fraction}, {"label", r.label}};
      break;
    case WorkerReply::Kind::done:
      j = {{"case", r.case_index},
           {"status", r.status},
           {"stored", r.stored},
           {"case_id", r.case_id},
           {"message", r.message}};
      if (r.latency_us) j["latency_us"] = *r.latency_us;
      if (r.retire) j["retire"] = true;
      break;
    case WorkerReply::Kind::cancelled:
      j = {{"case", r.case_index}, {"cancelled", true}};
      break;
  }
  // Invalid UTF-8 from a plugin's message must not make the line unencodable.
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

WorkerRequest decode_request(const std::string& line) {
  const json j = parse_line(line, "worker request");
  WorkerRequest r;
  r.case_index = case_of(j, line);
  if (!j.contains("key") || !j["key"].is_string() || !j.contains("run") || !j["run"].is_number_integer())
    throw std::runtime_error("worker request: needs \"key\" (string) and \"run\" (integer): " + line.substr(0, 200));
  r.key = j["key"].get<std::string>();
  r.run_id = j["run"].get<std::int64_t>();
  if (!j.contains("op") || !j.contains("settings"))
    throw std::runtime_error("worker request: needs \"op\" and \"settings\" (objects): " + line.substr(0, 200));
  try {
    r.op = operating_point_from_json(j["op"]);
  } catch (const ValidationError& e) {
    throw std::runtime_error(std::string("worker request: op: ") + e.what());
  }
  r.settings = settings_of(j["settings"]);
  return r;
}

WorkerReply decode_reply(const std::string& line) {
  const json j = parse_line(line, "worker reply");
  WorkerReply r;
  if (j.value("ready", false)) return r;
  r.case_index = case_of(j, line);
  if (j.value("cancelled", false)) {
    r.kind = WorkerReply::Kind::cancelled;
  } else if (j.contains("progress")) {
    r.kind = WorkerReply::Kind::progress;
    r.fraction = j["progress"].is_number() ? j["progress"].get<double>() : 0.0;
    r.label = j.value("label", "");
  } else if (j.contains("status") && j["status"].is_string()) {
    r.kind = WorkerReply::Kind::done;
    r.status = j["status"].get<std::string>();
    r.stored = j.value("stored", false);
    if (j.contains("case_id") && j["case_id"].is_number_integer()) r.case_id = j["case_id"].get<std::int64_t>();
    r.message = j.value("message", "");
    if (j.contains("latency_us") && j["latency_us"].is_number()) r.latency_us = j["latency_us"].get<double>();
    r.retire = j.value("retire", false);
  } else {
    throw std::runtime_error("worker reply: neither progress, status nor cancelled: " + line.substr(0, 200));
  }
  return r;
}

}  // namespace tilepath
