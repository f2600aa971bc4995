// libFuzzer target: a database file from arbitrary bytes, opened as every read-only command
// opens one (inspection, schema version, the case list). A file that is not a tilepath
// database, or a damaged one, must be refused with a StoreError or another exception with a
// message; a crash or sanitizer report is the bug. The bytes go to one file per process,
// rewritten for each input.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

#include "core/store/run_store.h"

namespace {

const std::string& input_path() {
  static const std::string path = "/tmp/tilepath-fuzz-db-" + std::to_string(::getpid()) + ".sqlite";
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = input_path();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  const bool written = std::fwrite(data, 1, size, f) == size;
  std::fclose(f);
  if (!written) return 0;
  std::remove((path + "-journal").c_str());
  std::remove((path + "-wal").c_str());
  try {
    (void)tilepath::RunStore::file_schema_version(path);
    const tilepath::RunStore store = tilepath::RunStore::open_read_only(path);
    for (const auto& c : store.cases()) (void)c.record.op.key();
  } catch (const std::exception&) {
  }
  return 0;
}
