#include "cli_process.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tilepath::testing {
namespace {

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

CliProcess::CliProcess(std::vector<std::string> args, const CliEnv& env) {
  std::string dir = make_temp_dir("proc");
  out_path_ = dir + "/stdout";
  err_path_ = dir + "/stderr";
  args.insert(args.begin(), TILEPATH_CLI_PATH);
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0) _exit(127);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    setenv("TILEPATH_PLUGIN_PATH", TILEPATH_PLUGIN_DIR, 1);
    setenv("TILEPATH_MODELS_DIR", TILEPATH_SOURCE_DIR "/models", 1);
    for (const auto& [name, value] : env) {
      if (name == kRunAsUid) {
        // Permissions bind root only through another user: drop to it before exec.
        const auto id = static_cast<uid_t>(std::stoul(value));
        if (setgroups(0, nullptr) != 0 || setgid(id) != 0 || setuid(id) != 0) _exit(126);
        continue;
      }
      setenv(name.c_str(), value.c_str(), 1);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
}

CliProcess::~CliProcess() {
  if (!reaped_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

void CliProcess::signal(int sig) const { kill(pid_, sig); }

bool CliProcess::running() {
  if (reaped_) return false;
  if (waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
  return !reaped_;
}

CliResult CliProcess::wait() {
  if (!reaped_) {
    waitpid(pid_, &status_, 0);
    reaped_ = true;
  }
  return {exit_code_of(status_), read_file(out_path_), read_file(err_path_)};
}

CliResult run_cli(std::vector<std::string> args, const CliEnv& env) { return CliProcess(std::move(args), env).wait(); }

std::string first_unreachable_as(uid_t uid, const std::vector<std::string>& paths) {
  // The check runs as that user (access() as root would answer for root), with plain system
  // calls only: the forked child must neither throw nor return into the test framework.
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(static_cast<gid_t>(uid)) != 0 || setuid(uid) != 0) _exit(255);
    for (std::size_t i = 0; i < paths.size() && i < 254; ++i) {
      struct stat st {};
      if (stat(paths[i].c_str(), &st) != 0) _exit(static_cast<int>(i) + 1);
      const bool search_or_run = S_ISDIR(st.st_mode) || (st.st_mode & S_IXUSR) != 0;
      if (access(paths[i].c_str(), R_OK | (search_or_run ? X_OK : 0)) != 0) _exit(static_cast<int>(i) + 1);
    }
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return "(the check as uid " + std::to_string(uid) + " did not exit)";
  const int code = WEXITSTATUS(status);
  if (code == 0) return "";
  if (code == 255) return "(could not become uid " + std::to_string(uid) + ")";
  return paths[static_cast<std::size_t>(code - 1)];
}

std::vector<std::string> cli_paths() { return {TILEPATH_CLI_PATH, TILEPATH_PLUGIN_DIR, TILEPATH_SOURCE_DIR "/models"}; }

std::string make_temp_dir(const std::string& tag) {
  std::string pattern = (std::filesystem::temp_directory_path() / ("tilepath-cli-" + tag + "-XXXXXX")).string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
  return pattern;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace tilepath::testing
