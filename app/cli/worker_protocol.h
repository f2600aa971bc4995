#pragma once
// What `tilepath sweep` and its `tilepath worker` processes say to each other: one JSON
// object per line. The sweep writes requests to the worker's stdin; the worker answers on
// file descriptor 3 (its stdout belongs to the plugin, which may print).
//
//   sweep  -> worker   {"case": I, "key": K, "run": R}     run case I of the spec into run R
//   worker -> sweep    {"ready": true}                      the backend loaded, the database opened
//                      {"case": I, "progress": F, "label": L}
//                      {"case": I, "status": S, "stored": B, "message": M, "latency_us": X}
//                      {"case": I, "cancelled": true}        a signal stopped it; nothing stored
//
// The worker checks that case I of its own expansion of the spec has key K, so a spec
// edited under a running sweep is an error, never a wrong case.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace tilepath::cli {

inline constexpr int kWorkerReplyFd = 3;

struct WorkerRequest {
  int case_index = -1;
  std::string key;
  std::int64_t run_id = 0;
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
  std::optional<double> latency_us;
};

std::string encode(const WorkerRequest& r);
std::string encode(const WorkerReply& r);
// Writes all of line to fd, through short writes and EINTR; false once the other end is gone.
bool write_all(int fd, const std::string& line);

// Throw std::runtime_error naming what is wrong with the line.
WorkerRequest decode_request(const std::string& line);
WorkerReply decode_reply(const std::string& line);

}  // namespace tilepath::cli
