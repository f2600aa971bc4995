#include "app/cli/output_file.h"

#include <filesystem>
#include <stdexcept>

#include "app/cli/command.h"

namespace tilepath::cli {

void require_absent(const std::string& path, const char* flag) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec))
    throw UsageError(std::string(flag) + " " + path + " already exists; give a new file name");
}

void require_existing(const std::string& path, const char* what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw std::runtime_error(std::string(what) + " " + path + ": no such file");
}

NewFileGuard::~NewFileGuard() {
  if (keep_) return;
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path_ + suffix, ec);
}

}  // namespace tilepath::cli
