// The HIP plugin where no AMD GPU or ROCm driver exists: it loads, initialises, reports
// zero devices with hipGetDeviceCount's error as the reason, and refuses to run a case
// naming that reason. Skips on a machine that has an AMD GPU.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "backends/abi/tilepath_backend.h"
#include "backends/hip/kernel_records.h"
#include "core/operating_point.h"
#include "core/plugin_host.h"

using namespace tilepath;

namespace {

const tp_backend_api* load_hip_plugin() {
  static const tp_backend_api* api = [] {
    const std::string path = std::string(TILEPATH_PLUGIN_DIR) + "/libtilepath_backend_hip.so";
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      ADD_FAILURE() << "dlopen " << path << ": " << dlerror();
      return static_cast<const tp_backend_api*>(nullptr);
    }
    auto entry = reinterpret_cast<tp_backend_entry_fn>(dlsym(handle, TILEPATH_BACKEND_ENTRY_SYMBOL));
    if (entry == nullptr) return static_cast<const tp_backend_api*>(nullptr);
    const tp_backend_api* a = entry(TILEPATH_ABI_MAJOR, TILEPATH_ABI_MINOR);
    char error[256] = "";
    if (a != nullptr && a->init(error, sizeof error) != 0) ADD_FAILURE() << "init: " << error;
    return a;
  }();
  return api;
}

}  // namespace

TEST(HipPluginWithoutGpu, ReportsZeroDevicesWithTheRuntimesReason) {
  const tp_backend_api* api = load_hip_plugin();
  ASSERT_NE(api, nullptr);
  EXPECT_STREQ(api->name, "hip");
  if (api->device_count() > 0) GTEST_SKIP() << "this machine has an AMD GPU";
  const std::string reason = api->no_device_reason();
  EXPECT_NE(reason.find("hipGetDeviceCount"), std::string::npos) << reason;
  EXPECT_NE(reason.find("gfx942"), std::string::npos) << reason;
}

TEST(HipPluginWithoutGpu, RefusesACaseNamingWhyThereIsNoDevice) {
  const tp_backend_api* api = load_hip_plugin();
  ASSERT_NE(api, nullptr);
  if (api->device_count() > 0) GTEST_SKIP() << "this machine has an AMD GPU";
  OperatingPoint op;
  op.kv = KvDtype::k8v8;
  op.k_path = KPath::fp8_qk;
  op.mode = TransformMode::k_only;
  const tp_case c = to_tp_case(op);
  char why[512] = "";
  EXPECT_EQ(api->supports(0, &c, why, sizeof why), 0);
  EXPECT_NE(std::string(why).find("hipGetDeviceCount"), std::string::npos) << why;
  tp_run_options options{};
  options.struct_size = sizeof options;
  tp_result result{};
  result.struct_size = sizeof result;
  EXPECT_EQ(api->run_case(0, &c, &options, &result), TP_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(result.message).find("does not exist"), std::string::npos) << result.message;
  api->release_result(&result);
}

TEST(HipPluginWithoutGpu, KernelRecordsNeedNoDevice) {
  // The harness library links the same kernel objects as the plugin: their records come
  // from the code objects in this test binary.
  const auto& records = hip::kernel_records();
  ASSERT_FALSE(records.empty());
  const hip::KernelRecord* fp8 = hip::find_kernel_record("decode_k8v8_fp8_qk_k_only_d128");
  ASSERT_NE(fp8, nullptr);
  EXPECT_EQ(fp8->code_object_sha256.size(), 64u) << fp8->note;
  EXPECT_GT(fp8->vgprs, 0);
  EXPECT_GE(fp8->waves_per_simd, fp8->target_waves_per_simd);
  EXPECT_TRUE(fp8->fp8_qk_mfma && fp8->fp8_pv_mfma);
}

TEST(HipPluginWithoutGpu, TheHostListsItsKernelsThroughTheAbi) {
  PluginHost host;
  const Backend* hip = host.load_file(std::string(TILEPATH_PLUGIN_DIR) + "/libtilepath_backend_hip.so");
  ASSERT_NE(hip, nullptr) << (host.problems().empty() ? "" : host.problems().front().reason);
  EXPECT_EQ(hip->abi_minor(), unsigned(TILEPATH_ABI_MINOR));
  ASSERT_EQ(hip->kernels().size(), hip::kernel_records().size());
  bool found = false;
  for (const KernelRecordInfo& k : hip->kernels()) {
    EXPECT_EQ(k.binary_sha256.size(), 64u) << k.name;
    EXPECT_GT(k.registers, 0) << k.name;
    EXPECT_EQ(k.scratch_bytes, 0) << k.name;
    EXPECT_GE(k.waves_per_simd, k.target_waves_per_simd) << k.name;
    if (k.name == "decode_k8v8_fp8_qk_k_only_d128") {
      found = true;
      // the plugin's record of its own code object equals the one this test binary embeds
      const hip::KernelRecord* local = hip::find_kernel_record(k.name);
      ASSERT_NE(local, nullptr);
      EXPECT_EQ(k.binary_sha256, local->code_object_sha256);
      EXPECT_EQ(k.registers, local->vgprs + local->agprs);
      EXPECT_EQ(k.shared_bytes, local->lds_bytes);
    }
  }
  EXPECT_TRUE(found);
}
