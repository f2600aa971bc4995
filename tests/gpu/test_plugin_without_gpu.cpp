// The CUDA plugin loads everywhere. Where there is no driver or GPU (the build
// machines) it reports zero devices and the reason, and refuses to run cases
// with a message instead of failing to load or crashing.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/plugin_host.h"
#include "cuda_test_support.h"

using namespace tilepath;

TEST(CudaPluginWithoutGpu, LoadsAndReportsZeroDevicesWithTheReason) {
  const std::string file = cuda::test::cuda_plugin_file();
  ASSERT_TRUE(std::filesystem::exists(file)) << file;
  PluginHost host;
  const Backend* backend = host.load_file(file);
  ASSERT_NE(backend, nullptr) << (host.problems().empty() ? "" : host.problems().front().reason);
  EXPECT_EQ(backend->name(), "cuda");
  const std::string reason = cuda::test::no_cuda_device_reason();
  if (reason.empty()) GTEST_SKIP() << "a CUDA device is present; this test is for machines without one";
  EXPECT_TRUE(backend->devices().empty());
  // The plugin's reason is cudaGetDeviceCount's error, the same one we see here.
  EXPECT_NE(backend->no_device_reason().find("cudaGetDeviceCount"), std::string::npos) << backend->no_device_reason();
  EXPECT_NE(backend->no_device_reason().find(reason.substr(0, reason.find(' '))), std::string::npos)
      << backend->no_device_reason() << " vs " << reason;
}

TEST(CudaPluginWithoutGpu, RunCaseOnAMissingDeviceFailsWithTheReason) {
  PluginHost host;
  const Backend* backend = host.load_file(cuda::test::cuda_plugin_file());
  ASSERT_NE(backend, nullptr);
  const int missing = int(backend->devices().size());
  OperatingPoint op;
  op.batch = 1;
  op.context = 64;
  const std::string why = backend->unsupported_reason(missing, op);
  EXPECT_NE(why.find("does not exist"), std::string::npos) << why;
  tp_run_options options{};
  options.struct_size = sizeof(options);
  options.repeats = 1;
  tp_result result{};
  const int status = backend->run(missing, op, options, result);
  EXPECT_EQ(status, TP_ERR_UNSUPPORTED);
  EXPECT_EQ(result.status, TP_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(result.message).find("does not exist"), std::string::npos) << result.message;
  backend->release(result);
}
