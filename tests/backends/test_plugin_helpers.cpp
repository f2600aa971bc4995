// backends/abi/tilepath_plugin.h, the helpers the cuda and hip plugins share: their text
// into the ABI's fixed buffers, the refusal of a device index, and progress with cancel.
#include "backends/abi/tilepath_plugin.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

using namespace tilepath;

namespace {

TEST(PluginText, IsCutToTheBufferAndAlwaysTerminated) {
  char buffer[6];
  plugin::copy_text(buffer, "abcdefgh");
  EXPECT_EQ(std::string(buffer), "abcde");
  plugin::copy_text(buffer, "ab");
  EXPECT_EQ(std::string(buffer), "ab");

  tp_result result{};
  EXPECT_EQ(plugin::finish(&result, TP_ERR_INVALID, "bad field"), TP_ERR_INVALID);
  EXPECT_EQ(result.status, TP_ERR_INVALID);
  EXPECT_EQ(std::string(result.message), "bad field");
}

TEST(PluginNoSuchDevice, NamesTheIndexTheCountAndWhyThereAreNone) {
  EXPECT_EQ(plugin::no_such_device("cuda", 3, 1, ""), "device 3 does not exist: the cuda backend has 1 devices");
  EXPECT_EQ(plugin::no_such_device("hip", 0, 0, "no AMD GPU found"),
            "device 0 does not exist: the hip backend has 0 devices (no AMD GPU found)");
}

struct ProgressLog {
  std::vector<std::pair<double, std::string>> calls;
  bool ask_to_stop = false;
};

int log_progress(void* user, double fraction, const char* phase) {
  auto* log = static_cast<ProgressLog*>(user);
  log->calls.emplace_back(fraction, phase);
  return log->ask_to_stop ? 1 : 0;
}

TEST(PluginPhaseReporter, PassesEachPhaseToTheHostsCallback) {
  ProgressLog log;
  tp_run_options options{};
  options.progress = log_progress;
  options.progress_user = &log;
  const plugin::PhaseReporter report(options);
  report(0.0, "generate");
  report(0.5, "timing");
  ASSERT_EQ(log.calls.size(), 2u);
  EXPECT_EQ(log.calls[1], std::make_pair(0.5, std::string("timing")));
}

TEST(PluginPhaseReporter, StopsWhenTheCancelFlagIsSetOrTheCallbackAsksTo) {
  tp_run_options no_callback{};
  volatile std::int32_t cancel = 0;
  no_callback.cancel = &cancel;
  const plugin::PhaseReporter quiet(no_callback);
  EXPECT_NO_THROW(quiet(0.1, "warmup"));
  cancel = 1;
  EXPECT_THROW(quiet(0.2, "timing"), plugin::CaseCancelled);

  ProgressLog log;
  log.ask_to_stop = true;
  tp_run_options options{};
  options.progress = log_progress;
  options.progress_user = &log;
  const plugin::PhaseReporter report(options);
  EXPECT_THROW(report(0.3, "stage_removed"), plugin::CaseCancelled);
  EXPECT_EQ(log.calls.size(), 1u) << "the host hears the phase it stopped in";
}

}  // namespace
