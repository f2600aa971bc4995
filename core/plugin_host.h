#pragma once
// Finds, loads and negotiates backend plugins (backends/abi/tilepath_backend.h).

#include <memory>
#include <string>
#include <vector>

#include "backends/abi/tilepath_backend.h"
#include "core/operating_point.h"

namespace tilepath {

struct DeviceInfo {
  int index = 0;
  std::string name, arch;
  std::string uid;  // the device's identity on its host (PCI bus id for a GPU); empty before ABI 2.6
  int sm_count = 0;
  double memory_bytes = 0, bandwidth_gbps = 0, l2_bytes = 0, clock_mhz = 0;
};

// One compiled kernel a plugin lists (tp_kernel_record, ABI 2.4).
struct KernelRecordInfo {
  std::string name, symbol, binary_sha256;
  int registers = -1, accum_registers = -1, shared_bytes = -1, scratch_bytes = -1, threads = 0;
  int waves_per_simd = -1, target_waves_per_simd = -1;
};

// One loaded plugin. Calls into it are serialised by an internal mutex.
class Backend {
 public:
  ~Backend();
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  const std::string& name() const { return name_; }
  const std::string& version() const { return version_; }
  const std::string& file() const { return file_; }
  unsigned abi_major() const;
  unsigned abi_minor() const;
  const std::vector<DeviceInfo>& devices() const { return devices_; }
  const std::string& no_device_reason() const { return no_device_reason_; }
  // The kernels the plugin lists (empty for a plugin older than ABI 2.4 or without any).
  const std::vector<KernelRecordInfo>& kernels() const { return kernels_; }

  // "" when supported, else the reason.
  std::string unsupported_reason(int device, const OperatingPoint& op, const std::string& gpu_model = "") const;
  // Runs one case; result->struct_size etc. are prepared here. The caller must
  // call release(result) when done with its metrics/artifacts.
  int run(int device, const OperatingPoint& op, const tp_run_options& options, tp_result& result,
          const std::string& gpu_model = "") const;
  void release(tp_result& result) const;

 private:
  friend class PluginHost;
  Backend() = default;
  void* handle_ = nullptr;
  const tp_backend_api* api_ = nullptr;
  std::string name_, version_, file_, no_device_reason_;
  std::vector<DeviceInfo> devices_;
  std::vector<KernelRecordInfo> kernels_;
  struct Lock;
  std::unique_ptr<Lock> lock_;
};

// A plugin file that could not be used, and why.
struct PluginProblem {
  std::string file;
  std::string reason;
};

class PluginHost {
 public:
  // Search order: $TILEPATH_PLUGIN_PATH (':'-separated dirs or files), the
  // executable's dir, <exe>/../plugins, <exe>/../lib/tilepath, the build tree's
  // plugins/ dir, the install dir. A name is loaded once (first found wins).
  static std::vector<std::string> search_dirs();
  void discover();
  // Load one file; returns the backend or nullptr with the reason added to problems().
  const Backend* load_file(const std::string& path);

  const std::vector<std::unique_ptr<Backend>>& backends() const { return backends_; }
  const std::vector<PluginProblem>& problems() const { return problems_; }
  // Throws std::runtime_error listing the loaded backends (and problems) when absent.
  const Backend& get(const std::string& name) const;
  const Backend* find(const std::string& name) const;

 private:
  std::vector<std::unique_ptr<Backend>> backends_;
  std::vector<PluginProblem> problems_;
};

}  // namespace tilepath
