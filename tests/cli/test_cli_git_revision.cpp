// The git revision a run records (runs.git_revision) is the revision of the source the
// binary was built from: `git rev-parse --short HEAD` at build time, "-dirty" when tracked
// files differed from HEAD (cmake/git_revision.cmake), "unknown" without git.

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "cli_process.h"
#include "core/store/run_store.h"

namespace tilepath::testing {
namespace {

namespace fs = std::filesystem;

// stdout of a shell command in the source tree, trailing newline removed; nullopt when it
// cannot run or exits non-zero.
std::optional<std::string> git_in_source(const std::string& args) {
  std::string cmd = "git -C '" TILEPATH_SOURCE_DIR "' " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return std::nullopt;
  std::string out;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int status = pclose(p);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

// Why the checkout counts as changed after the binary was built, if it does: HEAD moved
// (its reflog was written), the index was written, or a modified tracked file was written
// after the binary. Consulted only when the revisions differ.
std::optional<std::string> changed_after_build(const std::string& porcelain) {
  std::error_code ec;
  const auto built = fs::last_write_time(TILEPATH_CLI_PATH, ec);
  if (ec) return std::nullopt;
  auto newer = [&](const fs::path& p) {
    std::error_code e;
    auto t = fs::last_write_time(p, e);
    return !e && t > built;
  };
  auto git_file_newer = [&](const char* name) {
    std::optional<std::string> rel = git_in_source(std::string("rev-parse --git-path ") + name);
    if (!rel) return false;
    fs::path p = *rel;
    if (p.is_relative()) p = fs::path(TILEPATH_SOURCE_DIR) / p;
    return newer(p);
  };
  if (git_file_newer("logs/HEAD")) return "HEAD moved";
  // Commit, checkout or restore of a file, add, reset (and git status, which refreshes it).
  if (git_file_newer("index")) return "the git index was written";
  std::size_t start = 0;
  while (start < porcelain.size()) {
    std::size_t end = porcelain.find('\n', start);
    if (end == std::string::npos) end = porcelain.size();
    std::string line = porcelain.substr(start, end - start);
    start = end + 1;
    if (line.size() < 4) continue;
    std::string path = line.substr(3);
    if (std::size_t arrow = path.find(" -> "); arrow != std::string::npos) path = path.substr(arrow + 4);
    if (newer(fs::path(TILEPATH_SOURCE_DIR) / path)) return path + " was modified";
  }
  return std::nullopt;
}

class GitRevisionTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = make_temp_dir("git-revision"); }
  void TearDown() override { fs::remove_all(dir_); }

  // The revision a fresh cpu run stores in its database.
  std::string recorded_revision() const {
    std::string db = dir_ + "/rev.sqlite";
    std::vector<std::string> args = {"run", "--backend", "cpu", "--kv", "k8v8", "--repeats", "1", "--no-ablations"};
    for (const char* a : {"--batch", "1", "--context", "64", "--q-heads", "4", "--kv-heads", "1", "--head-dim", "64",
                          "--page-size", "16", "--db"})
      args.push_back(a);
    args.push_back(db);
    CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto runs = RunStore::open_read_only(db).runs();
    EXPECT_EQ(runs.size(), 1u);
    return runs.empty() ? std::string() : runs.front().git_revision;
  }

  std::string dir_;
};

TEST_F(GitRevisionTest, RunRecordsAWellFormedRevision) {
  std::string rev = recorded_revision();
  EXPECT_FALSE(rev.empty());
  EXPECT_TRUE(std::regex_match(rev, std::regex("[0-9a-f]{4,40}(-dirty)?|unknown"))) << rev;
}

TEST_F(GitRevisionTest, RunRecordsTheSourceTreesRevision) {
  if (!fs::exists(fs::path(TILEPATH_SOURCE_DIR) / ".git"))
    GTEST_SKIP() << "no .git in " TILEPATH_SOURCE_DIR
                    " (not a checkout): no source revision to compare the recorded one with";
  if (!git_in_source("--version"))
    GTEST_SKIP() << "git is not available here: no source revision to compare the recorded one with";
  std::optional<std::string> head = git_in_source("rev-parse --short HEAD");
  ASSERT_TRUE(head.has_value()) << "git rev-parse failed in " TILEPATH_SOURCE_DIR;
  std::optional<std::string> changes = git_in_source("--no-optional-locks status --porcelain --untracked-files=no");
  ASSERT_TRUE(changes.has_value()) << "git status failed in " TILEPATH_SOURCE_DIR;
  std::string expected = *head + (changes->empty() ? "" : "-dirty");

  std::string recorded = recorded_revision();
  if (recorded != expected) {
    // A checkout that moved on after the build (others commit into it, or one edits a
    // file and runs ctest without rebuilding) is a stale build, not a wrong revision.
    // CI builds and tests one clean clone, so there the comparison below is always strict.
    if (std::optional<std::string> why = changed_after_build(*changes))
      GTEST_SKIP() << "the binary records " << recorded << " but the checkout is now " << expected << ": " << *why
                   << " after the binary was built; rebuild to check";
  }
  EXPECT_EQ(recorded, expected)
      << "the binary must record the revision of the source it was built from (" TILEPATH_CLI_PATH ")";
}

}  // namespace
}  // namespace tilepath::testing
