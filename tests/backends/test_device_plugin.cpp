// backends/common/device_plugin.h, the ABI functions the cuda and hip plugins share, over a
// fake backend whose session does what the test asks: the refusals before and without
// devices, each failure's status, the session dropped after a failed runtime call (and only
// then), and device_info copying no more than the host's struct holds.
#include "backends/common/device_plugin.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using namespace tilepath;

namespace {

struct Fake {
  std::vector<tp_device_info> devices;
  std::string no_device_reason;
  std::string next_run = "ok";  // ok, unsupported, call_error, cancel, other
  int sessions_made = 0;
};

Fake& fake() {
  static Fake f;
  return f;
}

struct FakeCallError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct FakeBackend {
  static constexpr const char* kName = "fake";
  struct Survey {
    std::vector<tp_device_info> devices;
    std::string no_device_reason;
  };
  struct Session {
    explicit Session(int) { ++fake().sessions_made; }
    void run(const OperatingPoint& op, const tp_run_options&, tp_result& out, plugin::ResultStorage& storage) {
      const std::string& what = fake().next_run;
      if (what == "unsupported") throw plugin::UnsupportedCase("page_size: 3 is not one of the kernels' (16)");
      if (what == "call_error") throw FakeCallError("fakeMalloc: out of memory");
      if (what == "cancel") throw plugin::CaseCancelled();
      if (what == "other") throw std::runtime_error("the output check found NaN");
      storage.add_metric("latency_us", 2.0 * op.batch, "us");
      out.status = TP_OK;
    }
  };
  using CallError = FakeCallError;
  static Survey survey() { return {fake().devices, fake().no_device_reason}; }
  static std::string unsupported_reason(const OperatingPoint& op, const tp_device_info& info, int) {
    return op.batch > 100 ? "batch: " + std::to_string(op.batch) + " is more than " + info.name + " holds" : "";
  }
};

constexpr tp_backend_api kApi = plugin::DevicePlugin<FakeBackend>::api("1.2.3", nullptr, nullptr);

tp_device_info device_named(const char* name) {
  tp_device_info d{};
  d.struct_size = sizeof d;
  plugin::copy_text(d.name, name);
  plugin::copy_text(d.arch, "fake_arch");
  d.sm_count = 7;
  return d;
}

OperatingPoint shape(int batch) {
  OperatingPoint op;
  op.batch = batch;
  op.context = 256;
  op.q_heads = 8;
  op.kv_heads = 2;
  op.head_dim = 64;
  return op;
}

tp_run_options run_options() {
  tp_run_options o{};
  o.struct_size = sizeof o;
  return o;
}

// init with the given devices; the state is the plugin's own (static), so every test starts
// from a shutdown.
void start(std::vector<tp_device_info> devices, std::string reason = "") {
  kApi.shutdown();
  fake() = Fake{std::move(devices), std::move(reason)};
  char error[64] = "unset";
  ASSERT_EQ(kApi.init(error, sizeof error), 0);
  EXPECT_STREQ(error, "");
}

TEST(DevicePlugin, TheTableNamesTheBackendAndItsAbi) {
  EXPECT_EQ(kApi.struct_size, sizeof(tp_backend_api));
  EXPECT_EQ(kApi.abi_major, unsigned(TILEPATH_ABI_MAJOR));
  EXPECT_STREQ(kApi.name, "fake");
  EXPECT_STREQ(kApi.version, "1.2.3");
  EXPECT_EQ(kApi.kernel_count, nullptr);
}

TEST(DevicePlugin, WithoutDevicesEveryRefusalSaysWhy) {
  kApi.shutdown();
  EXPECT_STREQ(kApi.no_device_reason(), "the fake plugin was not initialised (call init first)");
  start({}, "fakeGetDeviceCount: no driver");
  EXPECT_EQ(kApi.device_count(), 0);
  EXPECT_STREQ(kApi.no_device_reason(), "fakeGetDeviceCount: no driver");

  const tp_case c = to_tp_case(shape(1));
  char why[256] = "";
  EXPECT_EQ(kApi.supports(0, &c, why, sizeof why), 0);
  EXPECT_STREQ(why, "device 0 does not exist: the fake backend has 0 devices (fakeGetDeviceCount: no driver)");
  const tp_run_options o = run_options();
  tp_result r{};
  EXPECT_EQ(kApi.run_case(0, &c, &o, &r), TP_ERR_UNSUPPORTED);
  EXPECT_STREQ(r.message, why);
  EXPECT_EQ(fake().sessions_made, 0);
  kApi.shutdown();
}

TEST(DevicePlugin, SupportsAsksTheBackendWithTheDevice) {
  start({device_named("Fake GPU")});
  char why[256] = "";
  const tp_case fits = to_tp_case(shape(4));
  EXPECT_EQ(kApi.supports(0, &fits, why, sizeof why), 1);
  EXPECT_STREQ(why, "");
  const tp_case too_big = to_tp_case(shape(101));
  EXPECT_EQ(kApi.supports(0, &too_big, why, sizeof why), 0);
  EXPECT_STREQ(why, "batch: 101 is more than Fake GPU holds");
  EXPECT_EQ(kApi.supports(1, &fits, why, sizeof why), 0);
  EXPECT_STREQ(why, "device 1 does not exist: the fake backend has 1 devices");
  kApi.shutdown();
}

TEST(DevicePlugin, EachFailureHasItsStatusAndOnlyAFailedCallDropsTheSession) {
  start({device_named("Fake GPU")});
  const tp_case c = to_tp_case(shape(3));
  const tp_run_options o = run_options();
  auto run = [&](const char* what) {
    fake().next_run = what;
    tp_result r{};
    const int status = kApi.run_case(0, &c, &o, &r);
    EXPECT_EQ(status, r.status);
    const std::string message = r.message;
    const int metrics = r.metric_count;
    kApi.release_result(&r);
    return std::make_tuple(status, message, metrics);
  };
  EXPECT_EQ(run("ok"), std::make_tuple(int(TP_OK), std::string(""), 1));
  EXPECT_EQ(fake().sessions_made, 1);
  EXPECT_EQ(run("unsupported"),
            std::make_tuple(int(TP_ERR_UNSUPPORTED), std::string("page_size: 3 is not one of the kernels' (16)"), 0));
  EXPECT_EQ(run("cancel"), std::make_tuple(int(TP_ERR_CANCELLED), std::string("cancelled"), 0));
  EXPECT_EQ(run("other"), std::make_tuple(int(TP_ERR_RUNTIME), std::string("the output check found NaN"), 0));
  EXPECT_EQ(run("ok"), std::make_tuple(int(TP_OK), std::string(""), 1));
  EXPECT_EQ(fake().sessions_made, 1) << "the session outlives failures of its cases";
  EXPECT_EQ(run("call_error"), std::make_tuple(int(TP_ERR_RUNTIME), std::string("fakeMalloc: out of memory"), 0));
  EXPECT_EQ(run("ok"), std::make_tuple(int(TP_OK), std::string(""), 1));
  EXPECT_EQ(fake().sessions_made, 2) << "a failed runtime call starts the next case on a fresh session";
  kApi.shutdown();
}

TEST(DevicePlugin, BadArgumentsAreRefusedBeforeTheDeviceIsTouched) {
  start({device_named("Fake GPU")});
  const tp_run_options o = run_options();
  tp_result r{};
  EXPECT_EQ(kApi.run_case(0, nullptr, &o, &r), TP_ERR_INVALID);
  EXPECT_STREQ(r.message, "run_case: case and options must not be NULL");
  EXPECT_EQ(kApi.run_case(0, nullptr, &o, nullptr), TP_ERR_INVALID);

  const tp_case bad = to_tp_case(shape(0));
  EXPECT_EQ(kApi.run_case(0, &bad, &o, &r), TP_ERR_INVALID);
  EXPECT_NE(std::string(r.message).find("batch"), std::string::npos) << r.message;

  const tp_case c = to_tp_case(shape(2));
  tp_run_options negative_repeats = run_options();
  negative_repeats.repeats = -1;
  EXPECT_EQ(kApi.run_case(0, &c, &negative_repeats, &r), TP_ERR_INVALID);
  EXPECT_NE(std::string(r.message).find("repeats"), std::string::npos) << r.message;
  EXPECT_EQ(fake().sessions_made, 0);
  kApi.shutdown();
}

TEST(DevicePlugin, DeviceInfoCopiesNoMoreThanTheHostsStruct) {
  start({device_named("Fake GPU")});
  tp_device_info full{};
  full.struct_size = sizeof full;
  ASSERT_EQ(kApi.device_info(0, &full), 0);
  EXPECT_STREQ(full.name, "Fake GPU");
  EXPECT_EQ(full.sm_count, 7);
  EXPECT_EQ(full.struct_size, sizeof full);

  // An older host's struct ends after the name: nothing past it is written.
  constexpr std::size_t kOld = offsetof(tp_device_info, arch);
  tp_device_info old;
  std::memset(&old, 0xAB, sizeof old);
  old.struct_size = kOld;
  ASSERT_EQ(kApi.device_info(0, &old), 0);
  EXPECT_EQ(old.struct_size, kOld);
  EXPECT_STREQ(old.name, "Fake GPU");
  const auto* bytes = reinterpret_cast<const unsigned char*>(&old);
  for (std::size_t i = kOld; i < sizeof old; ++i) ASSERT_EQ(bytes[i], 0xAB) << "byte " << i;

  EXPECT_EQ(kApi.device_info(1, &full), 1);
  EXPECT_EQ(kApi.device_info(0, nullptr), 1);
  kApi.shutdown();
}

}  // namespace
