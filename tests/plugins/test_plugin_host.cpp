// Plugin discovery, ABI negotiation and failure reporting.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/case_runner.h"
#include "core/plugin_host.h"

namespace fs = std::filesystem;
using tilepath::PluginHost;

namespace {

std::string fake(const std::string& name) {
  return std::string(FAKE_PLUGIN_DIR) + "/libtilepath_backend_" + name + ".so";
}

const tilepath::PluginProblem* problem_for(const PluginHost& host, const std::string& file) {
  for (const auto& p : host.problems()) {
    if (p.file == file) return &p;
  }
  return nullptr;
}

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_.empty())
      unsetenv(name_);
    else
      setenv(name_, old_.c_str(), 1);
  }

 private:
  const char* name_;
  std::string old_;
};

}  // namespace

TEST(PluginHost, LoadsAGoodPluginAndReadsItsDevices) {
  PluginHost host;
  const auto* b = host.load_file(fake("fake_ok"));
  ASSERT_NE(b, nullptr) << (host.problems().empty() ? "" : host.problems().front().reason);
  EXPECT_EQ(b->name(), "fake_ok");
  EXPECT_EQ(b->version(), "0.0.1");
  EXPECT_EQ(b->abi_major(), TILEPATH_ABI_MAJOR);
  ASSERT_EQ(b->devices().size(), 1u);
  EXPECT_EQ(b->devices()[0].name, "Fake Device");
  EXPECT_EQ(b->devices()[0].sm_count, 7);
  EXPECT_DOUBLE_EQ(b->devices()[0].bandwidth_gbps, 123.0);
  EXPECT_EQ(b->devices()[0].uid, "fake:0");
  EXPECT_TRUE(b->no_device_reason().empty());
}

TEST(PluginHost, RunsACaseThroughTheAbi) {
  PluginHost host;
  const auto* b = host.load_file(fake("fake_ok"));
  ASSERT_NE(b, nullptr);
  tilepath::OperatingPoint op;
  op.batch = 3;
  tp_run_options options{};
  options.struct_size = sizeof options;
  tp_result result{};
  EXPECT_EQ(b->run(0, op, options, result), TP_OK);
  EXPECT_DOUBLE_EQ(result.latency_us, 30.0);
  EXPECT_STREQ(result.kernel_name, "fake_kernel");
  EXPECT_TRUE(std::isnan(result.tile_interval_us)) << "host pre-fills values the plugin leaves alone with NaN";
  b->release(result);
}

TEST(PluginHost, SupportsReportsThePluginsReasonAndValidatesFirst) {
  PluginHost host;
  const auto* b = host.load_file(fake("fake_ok"));
  ASSERT_NE(b, nullptr);
  tilepath::OperatingPoint op;
  EXPECT_EQ(b->unsupported_reason(0, op), "");
  op.head_dim = 256;
  EXPECT_EQ(b->unsupported_reason(0, op), "fake backend has no head_dim 256 kernel");
  op.head_dim = 96;  // invalid operating point: the host says so before asking the plugin
  EXPECT_NE(b->unsupported_reason(0, op).find("head_dim"), std::string::npos);
  op.head_dim = 128;
  EXPECT_NE(b->unsupported_reason(5, op).find("device 5 does not exist"), std::string::npos);
}

// A plugin older than ABI 2.6 fills a tp_device_info that ends before uid and says so in
// struct_size: the host leaves the uid empty instead of reading what lies past the struct.
TEST(PluginHost, ADeviceOfAPluginOlderThanAbi26HasNoUid) {
  PluginHost host;
  const auto* b = host.load_file(fake("fake_minor4"));
  ASSERT_NE(b, nullptr) << (host.problems().empty() ? "" : host.problems().front().reason);
  ASSERT_EQ(b->devices().size(), 1u);
  EXPECT_EQ(b->devices()[0].name, "Fake Device");
  EXPECT_EQ(b->devices()[0].uid, "");
}

// A plugin of ABI 2.4 cannot read tp_case.mma: a wgmma case is refused by the host,
// naming the field, instead of running as mma_sync; mma_sync cases run as before.
TEST(PluginHost, AWgmmaCaseIsNotSentToAPluginOlderThanAbi25) {
  PluginHost host;
  const auto* b = host.load_file(fake("fake_minor4"));
  ASSERT_NE(b, nullptr) << (host.problems().empty() ? "" : host.problems().front().reason);
  EXPECT_EQ(b->abi_minor(), 4u);
  tilepath::OperatingPoint op;
  op.batch = 2;
  EXPECT_EQ(b->unsupported_reason(0, op), "");
  op.mma = tilepath::Mma::wgmma;
  const std::string expected =
      "mma: plugin 'fake_minor4' speaks ABI 2.4, which cannot take a matrix instruction family (ABI 2.5); allowed: "
      "mma_sync";
  EXPECT_EQ(b->unsupported_reason(0, op), expected);
  tp_run_options options{};
  options.struct_size = sizeof options;
  tp_result result{};
  EXPECT_EQ(b->run(0, op, options, result), TP_ERR_UNSUPPORTED);
  EXPECT_EQ(std::string(result.message), expected);
  EXPECT_TRUE(std::isnan(result.latency_us)) << "the plugin was not called";
  b->release(result);
  // A plugin of the current minor gets the case.
  const auto* current = host.load_file(fake("fake_ok"));
  ASSERT_NE(current, nullptr);
  EXPECT_EQ(current->unsupported_reason(0, op), "");
}

TEST(PluginHost, WrongAbiVersionIsRejectedWithBothVersions) {
  PluginHost host;
  EXPECT_EQ(host.load_file(fake("fake_wrongabi")), nullptr);
  const auto* p = problem_for(host, fake("fake_wrongabi"));
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p->reason.find("ABI version mismatch"), std::string::npos) << p->reason;
  EXPECT_NE(p->reason.find("99.0"), std::string::npos) << p->reason;
  EXPECT_TRUE(host.backends().empty());
}

TEST(PluginHost, PluginOfTheOldMajorIsRefusedNamingBothVersions) {
  // Built against ABI 1 (stage costs as a fixed array): refuses this host, and the
  // host asks it again with major 1 to say which ABI it speaks.
  PluginHost host;
  EXPECT_EQ(host.load_file(fake("fake_oldmajor")), nullptr);
  const auto* p = problem_for(host, fake("fake_oldmajor"));
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p->reason.find("plugin speaks 1.0, host speaks " + std::to_string(TILEPATH_ABI_MAJOR) + "."),
            std::string::npos)
      << p->reason;
  EXPECT_NE(p->reason.find("rebuild the plugin"), std::string::npos) << p->reason;
  EXPECT_TRUE(host.backends().empty());
}

TEST(PluginHost, PluginRefusingTheHostVersionIsRejected) {
  PluginHost host;
  EXPECT_EQ(host.load_file(fake("fake_refuses")), nullptr);
  const auto* p = problem_for(host, fake("fake_refuses"));
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p->reason.find("does not support host ABI"), std::string::npos) << p->reason;
}

TEST(PluginHost, InitFailureIsReportedWithThePluginsMessage) {
  PluginHost host;
  EXPECT_EQ(host.load_file(fake("fake_initfails")), nullptr);
  const auto* p = problem_for(host, fake("fake_initfails"));
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p->reason.find("simulated runtime failure"), std::string::npos) << p->reason;
}

TEST(PluginHost, LibraryWithoutEntrySymbolIsNotABackend) {
  PluginHost host;
  EXPECT_EQ(host.load_file(fake("notabackend")), nullptr);
  const auto* p = problem_for(host, fake("notabackend"));
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p->reason.find("no symbol 'tilepath_backend_entry'"), std::string::npos) << p->reason;
}

TEST(PluginHost, GarbageFileFailsToLoadWithTheLoaderMessage) {
  const fs::path dir = fs::temp_directory_path() / ("tilepath-garbage-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "libtilepath_backend_garbage.so";
  std::ofstream(file) << "this is not an ELF file";
  PluginHost host;
  EXPECT_EQ(host.load_file(file.string()), nullptr);
  const auto* p = problem_for(host, file.string());
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p->reason.find("cannot load"), std::string::npos) << p->reason;
  fs::remove_all(dir);
}

TEST(PluginHost, ZeroDevicesComeWithAReason) {
  PluginHost host;
  const auto* b = host.load_file(fake("fake_nodevices"));
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->devices().empty());
  EXPECT_EQ(b->no_device_reason(), "no fake accelerator present");
}

TEST(PluginHost, BrokenPluginsDoNotStopTheOthers) {
  // Discovery over the whole fixture dir: the good ones load, each bad one is named with its reason.
  ScopedEnv env("TILEPATH_PLUGIN_PATH", FAKE_PLUGIN_DIR);
  PluginHost host;
  host.discover();
  EXPECT_NE(host.find("fake_ok"), nullptr);
  EXPECT_NE(host.find("fake_nodevices"), nullptr);
  EXPECT_EQ(host.find("fake_wrongabi"), nullptr);
  EXPECT_NE(problem_for(host, fake("fake_wrongabi")), nullptr);
  EXPECT_NE(problem_for(host, fake("fake_initfails")), nullptr);
  EXPECT_NE(problem_for(host, fake("notabackend")), nullptr);
  // The real plugins of the build tree are found too.
  EXPECT_NE(host.find("cpu"), nullptr);
  EXPECT_NE(host.find("sim"), nullptr);
}

TEST(PluginHost, SamePluginNameIsLoadedOnce) {
  PluginHost host;
  ASSERT_NE(host.load_file(fake("fake_ok")), nullptr);
  EXPECT_EQ(host.load_file(fake("fake_ok")), nullptr);
  EXPECT_EQ(host.backends().size(), 1u);
  ASSERT_FALSE(host.problems().empty());
  EXPECT_NE(host.problems().back().reason.find("already loaded"), std::string::npos);
}

TEST(PluginHost, GetNamesTheLoadedBackendsWhenOneIsMissing) {
  PluginHost host;
  ASSERT_NE(host.load_file(fake("fake_ok")), nullptr);
  try {
    host.get("cuda");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no backend named 'cuda'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("fake_ok"), std::string::npos);
  }
}

TEST(PluginHost, SearchPathHonoursTheEnvironmentFirst) {
  ScopedEnv env("TILEPATH_PLUGIN_PATH", "/first:/second");
  const auto dirs = PluginHost::search_dirs();
  ASSERT_GE(dirs.size(), 3u);
  EXPECT_EQ(dirs[0], "/first");
  EXPECT_EQ(dirs[1], "/second");
  EXPECT_NE(std::find(dirs.begin(), dirs.end(), std::string(TILEPATH_PLUGIN_DIR)), dirs.end());
}

// A plugin's name on something that cannot be a plugin is named with the reason, not
// skipped silently: a directory, a symlink loop, a dangling link.
TEST(PluginHost, NonFilesWithAPluginsNameAreReported) {
  const fs::path dir = fs::temp_directory_path() / ("tilepath_plugin_names_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "libtilepath_backend_adir.so");
  fs::create_symlink(dir / "libtilepath_backend_loop.so", dir / "libtilepath_backend_loop.so");
  fs::create_symlink(dir / "nowhere", dir / "libtilepath_backend_dangling.so");
  {
    ScopedEnv env("TILEPATH_PLUGIN_PATH", dir.string());
    PluginHost host;
    host.discover();
    const auto* adir = problem_for(host, (dir / "libtilepath_backend_adir.so").string());
    ASSERT_NE(adir, nullptr);
    EXPECT_NE(adir->reason.find("directory"), std::string::npos) << adir->reason;
    const auto* loop = problem_for(host, (dir / "libtilepath_backend_loop.so").string());
    ASSERT_NE(loop, nullptr);
    EXPECT_NE(loop->reason.find("cannot resolve"), std::string::npos) << loop->reason;
    EXPECT_NE(problem_for(host, (dir / "libtilepath_backend_dangling.so").string()), nullptr);
  }
  fs::remove_all(dir);
}

// A plugin that returns OK with list counts pointing nowhere had segfaulted the host;
// now the case is an error naming the plugin and the bad field, and nothing reads them.
TEST(PluginHost, AnInconsistentResultIsAnErrorNamingThePlugin) {
  PluginHost host;
  const auto* b = host.load_file(fake("fake_bogus"));
  ASSERT_NE(b, nullptr) << (host.problems().empty() ? "" : host.problems().front().reason);
  tilepath::OperatingPoint op;
  tp_run_options options{};
  options.struct_size = sizeof options;
  tp_result result{};
  EXPECT_EQ(b->run(0, op, options, result), TP_ERR_RUNTIME);
  const std::string message = result.message;
  EXPECT_NE(message.find("fake_bogus"), std::string::npos) << message;
  EXPECT_NE(message.find("metric_count 1000000000"), std::string::npos) << message;
  b->release(result);

  tilepath::RunSettings settings;
  settings.repeats = 1;
  settings.warmup = 0;
  const tilepath::CaseRecord rec = tilepath::run_case(*b, op, settings);
  EXPECT_EQ(rec.status, tilepath::CaseStatus::error);
  EXPECT_TRUE(rec.measurements.empty());
}
