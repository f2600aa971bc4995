#pragma once
// Runs the built `tilepath` binary as a child process for the end-to-end tests.
// stdout and stderr go to temporary files (no pipe deadlocks on long output).

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace tilepath::testing {

struct CliResult {
  int exit_code = -1;  // 128 + signal when killed by a signal
  std::string out, err;
};

// Environment variables set in the child after the defaults (which they may replace).
using CliEnv = std::vector<std::pair<std::string, std::string>>;
// Not a variable: {kRunAsUid, "65534"} runs the child as that user (and group), for
// tests of file permissions, which do not bind root.
inline constexpr const char* kRunAsUid = "@run-as-uid";

// The CLI under test; its plugins come from the build's plugins/ dir and its GPU
// models from the source tree (set in the child's environment).
class CliProcess {
 public:
  explicit CliProcess(std::vector<std::string> args, const CliEnv& env = {});
  ~CliProcess();
  CliProcess(const CliProcess&) = delete;
  CliProcess& operator=(const CliProcess&) = delete;

  void signal(int sig) const;
  pid_t pid() const { return pid_; }
  bool running();  // false once it exited (reaps it)
  CliResult wait();

 private:
  pid_t pid_ = -1;
  std::string out_path_, err_path_;
  bool reaped_ = false;
  int status_ = 0;
};

// Run to completion.
CliResult run_cli(std::vector<std::string> args, const CliEnv& env = {});

// The first of `paths` that user `uid` cannot reach (read, and search for a folder, execute for
// a file that is executable), or "" when it reaches them all. A clone under a folder that only
// its owner may enter (root's home is 0700) keeps every other user from the built CLI.
std::string first_unreachable_as(uid_t uid, const std::vector<std::string>& paths);
// The files a CLI run as another user reads: the binary, its plugins, the GPU models.
std::vector<std::string> cli_paths();

// A fresh empty directory under the test temp dir, removed by the caller's fixture.
std::string make_temp_dir(const std::string& tag);
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& text);
// Lines of s without the trailing empty one.
std::vector<std::string> lines(const std::string& s);

}  // namespace tilepath::testing
