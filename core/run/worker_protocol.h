#pragma once
// What a sweep (`tilepath sweep`, the GUI's Run panel) and its `tilepath worker` processes
// say to each other: one JSON object per line. The sweep writes requests to the worker's
// stdin; the worker answers on file descriptor 3 (its stdout belongs to the plugin, which
// may print).
//
//   sweep  -> worker   {"case": I, "key": K, "run": R, "op": {...}, "settings": {...}}
//                      run this operating point with these settings into run R
//   worker -> sweep    {"ready": true}                      the backend loaded, the database opened
//                      {"case": I, "progress": F, "label": L}
//                      {"case": I, "status": S, "stored": B, "case_id": C, "message": M, "latency_us": X}
//                      {"case": I, "cancelled": true}        a signal stopped it; nothing stored
//
// A request carries the whole case (to_json(OperatingPoint), to_json(RunSettings)), so a
// worker needs no spec file and runs what the GUI built in memory as well as a spec's case.
// I is the sweep's own index, echoed in the replies. The worker checks that op and settings
// give the case key K, so a case that did not survive the trip through JSON is an error,
// never a wrong case stored under the sweep's key. C is the id of the case the worker stored
// (0 when it stored none): the sweep reads the record back to report it whole (its gate).

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/case_runner.h"

namespace tilepath {

inline constexpr int kWorkerReplyFd = 3;

struct WorkerRequest {
  int case_index = -1;
  std::string key;
  std::int64_t run_id = 0;
  OperatingPoint op;
  RunSettings settings;
};

struct WorkerReply {
  enum class Kind { ready, progress, done, cancelled };
  Kind kind = Kind::ready;
  int case_index = -1;
  double fraction = 0;
  std::string label;
  // done
  std::string status, message;
  bool stored = false;
  std::int64_t case_id = 0;
  std::optional<double> latency_us;
  // The worker ends after this reply and the sweep starts a fresh one: its plugin reported a
  // runtime error, which may have left the device unusable in this process (a sticky CUDA
  // error poisons the context until the process exits).
  bool retire = false;
};

std::string encode(const WorkerRequest& r);
std::string encode(const WorkerReply& r);
// Writes all of line to fd, through short writes and EINTR; false once the other end is gone.
bool write_all(int fd, const std::string& line);

// Throw std::runtime_error naming what is wrong with the line.
WorkerRequest decode_request(const std::string& line);
WorkerReply decode_reply(const std::string& line);

}  // namespace tilepath
