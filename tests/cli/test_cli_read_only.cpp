// Commands that only read never write: on a copy of the bundled database, every
// read-only command leaves the file byte-identical with no -wal, -shm or -journal beside
// it, in a writable folder, as a read-only file in a read-only folder (run as another
// user when the test runs as root, whom permissions do not bind), and as a file left in
// WAL mode.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <sqlite3.h>

#include "cli_process.h"

namespace tilepath::testing {
namespace {

namespace fs = std::filesystem;

const std::string kBundled = std::string(TILEPATH_SOURCE_DIR) + "/data/h200-sweep.sqlite";
const std::string kHeldOut = std::string(TILEPATH_SOURCE_DIR) + "/models/fits/h200-held-out.json";

// The whole file, compared byte for byte: a hash of 28 MB per command costs minutes in the
// sanitizer job's -O0 build.
std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::vector<std::string> sidecars(const std::string& db) {
  std::vector<std::string> found;
  for (const char* suffix : {"-wal", "-shm", "-journal"})
    if (fs::exists(db + suffix)) found.push_back(db + suffix);
  return found;
}

// Every command that reads a database and writes none (the output files of export and
// merge go elsewhere).
std::vector<std::vector<std::string>> read_only_commands(const std::string& db, const std::string& out_dir) {
  return {
      {"report", "--db", db},
      {"report", "--db", db, "--format", "csv", "--kv", "k8v8"},
      {"report", "--db", db, "--json"},
      {"analyze", "--db", db, "--batch", "64", "--context", "4096", "--kv", "k8v8", "--k-path", "transform", "--mode",
       "full", "--cache", "hbm_cold"},
      {"dispatch", "--db", db, "--cache", "hbm_cold"},
      {"model", "check", "--db", db, "--gpu", "h200", "--held-out", kHeldOut},
      {"model", "ii", "--db", db},
      {"export", "--db", db, "--out", out_dir + "/subset.sqlite", "--kv", "k8v8"},
      {"merge", db, db, "--out", out_dir + "/merged.sqlite"},
  };
}

class CliReadOnlyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir("read-only");
    // Another user (run_as) must reach the files.
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
    out_dir_ = dir_ + "/out";
    fs::create_directory(out_dir_);
    fs::permissions(out_dir_, fs::perms::all);
  }
  void TearDown() override {
    std::error_code ec;
    for (const auto& entry : fs::recursive_directory_iterator(dir_, ec))
      fs::permissions(entry.path(), fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_, ec);
  }

  // Runs every read-only command on db (as `env` says) and checks the file after each.
  void expect_untouched_by_every_command(const std::string& db, const CliEnv& env = {}) {
    const std::string before = file_bytes(db);
    ASSERT_FALSE(before.empty()) << db;
    for (const auto& args : read_only_commands(db, out_dir_)) {
      fs::remove(out_dir_ + "/subset.sqlite");
      fs::remove(out_dir_ + "/merged.sqlite");
      std::string line;
      for (const auto& a : args) line += a + " ";
      const CliResult r = run_cli(args, env);
      EXPECT_EQ(r.exit_code, 0) << line << "\n" << r.err;
      EXPECT_TRUE(file_bytes(db) == before) << line << "changed the file";
      EXPECT_EQ(sidecars(db), std::vector<std::string>{}) << line << "left files beside it";
    }
  }

  // Root is not bound by permissions, so the commands run as nobody (65534) then. The reason
  // nobody cannot, or "" when it can (or no other user is needed).
  static std::string why_no_other_user() {
    if (geteuid() != 0) return "";
    std::vector<std::string> paths = cli_paths();
    paths.push_back(kHeldOut);
    const std::string unreachable = first_unreachable_as(65534, paths);
    if (unreachable.empty()) return "";
    return "uid 65534 cannot reach " + unreachable +
           " (a folder above it is closed to other users, as root's home is): this check needs the build in a "
           "folder every user may enter, e.g. a clone under /tmp or /srv";
  }
  static CliEnv as_other_user() {
    CliEnv env;
    if (geteuid() == 0) env.push_back({kRunAsUid, "65534"});
    return env;
  }

  std::string dir_, out_dir_;
};

TEST_F(CliReadOnlyTest, EveryReadOnlyCommandLeavesTheFileByteIdentical) {
  const std::string db = dir_ + "/h200.sqlite";
  fs::copy_file(kBundled, db);
  expect_untouched_by_every_command(db);
}

TEST_F(CliReadOnlyTest, AReadOnlyFileInAReadOnlyFolderOpens) {
  const std::string folder = dir_ + "/ro";
  fs::create_directory(folder);
  const std::string db = folder + "/h200.sqlite";
  fs::copy_file(kBundled, db);
  fs::permissions(db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);  // 0444
  fs::permissions(folder, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                              fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);  // 0555
  if (const std::string why = why_no_other_user(); !why.empty()) GTEST_SKIP() << why;
  const CliEnv env = as_other_user();
  // The folder really is read-only for whoever runs the commands.
  const CliResult probe = run_cli({"export", "--db", db, "--out", folder + "/nope.sqlite"}, env);
  ASSERT_NE(probe.exit_code, 0) << "the folder is writable: the test would prove nothing";
  expect_untouched_by_every_command(db, env);
}

// A file a writer left in WAL mode (it closed while a reader still had the file open, so
// it could not switch back): readers must not create -wal and -shm beside it, and in a
// read-only folder they could not.
TEST_F(CliReadOnlyTest, AFileLeftInWalModeOpensWithoutSidecars) {
  const std::string folder = dir_ + "/wal";
  fs::create_directory(folder);
  fs::permissions(folder, fs::perms::all);
  const std::string db = folder + "/h200.sqlite";
  fs::copy_file(kBundled, db);
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(raw);  // the last connection: checkpoints and removes -wal and -shm
  }
  ASSERT_EQ(sidecars(db), std::vector<std::string>{});
  {
    std::ifstream in(db, std::ios::binary);
    char header[19] = {};
    in.read(header, sizeof header);
    ASSERT_EQ(header[18], 2) << "not in WAL mode";
  }
  fs::permissions(db, fs::perms::all);
  expect_untouched_by_every_command(db);

  fs::permissions(folder, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                              fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  if (const std::string why = why_no_other_user(); !why.empty())
    GTEST_SKIP() << "the read-only folder part skipped (the writable-folder part ran above): " << why;
  expect_untouched_by_every_command(db, as_other_user());
}

}  // namespace
}  // namespace tilepath::testing
