#pragma once
// Guards for commands that write a NEW database file (export, merge): the target
// must not exist, and a failed write leaves nothing behind.

#include <string>

namespace tilepath::cli {

// Throws UsageError when path exists.
void require_absent(const std::string& path, const char* flag);
// Throws std::runtime_error naming the flag when path does not exist.
void require_existing(const std::string& path, const char* what);

// Removes path and its SQLite side files (-wal, -shm, -journal) unless keep() was called.
class NewFileGuard {
 public:
  explicit NewFileGuard(std::string path) : path_(std::move(path)) {}
  ~NewFileGuard();
  NewFileGuard(const NewFileGuard&) = delete;
  NewFileGuard& operator=(const NewFileGuard&) = delete;
  void keep() { keep_ = true; }

 private:
  std::string path_;
  bool keep_ = false;
};

}  // namespace tilepath::cli
