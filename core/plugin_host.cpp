#include "core/plugin_host.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>
#include <set>
#include <stdexcept>

namespace fs = std::filesystem;

namespace tilepath {

struct Backend::Lock {
  std::mutex mutex;
};

namespace {

// Plugins are named libtilepath_backend_<name>.so.
bool looks_like_plugin(const fs::path& p) {
  const std::string file = p.filename().string();
  return file.rfind("libtilepath_backend_", 0) == 0 && p.extension() == ".so";
}

fs::path executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

// Copy a C string from a fixed-size plugin buffer, never reading past it.
template <std::size_t N>
std::string bounded(const char (&buffer)[N]) {
  return std::string(buffer, strnlen(buffer, N));
}

void fill_nan(tp_result& r) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  r.latency_us = r.latency_min_us = r.latency_max_us = nan;
  r.tile_interval_us = nan;
  r.bytes_moved = r.read_bandwidth_gbps = r.floor_fraction = nan;
  r.occupancy_theoretical = r.occupancy_achieved = nan;
  r.rel_l2_error = r.max_abs_error = r.tolerance = nan;
  for (tp_gate_value* g : {&r.gate_rel_l2, &r.gate_max_abs, &r.gate_kl, &r.gate_top8, &r.gate_top32})
    g->worst = g->median = nan;
  r.regs_per_thread = r.smem_static_bytes = r.smem_dynamic_bytes = -1;
}

}  // namespace

Backend::~Backend() {
  if (api_ != nullptr && api_->shutdown != nullptr) api_->shutdown();
  if (handle_ != nullptr) dlclose(handle_);
}

unsigned Backend::abi_major() const { return api_->abi_major; }
unsigned Backend::abi_minor() const { return api_->abi_minor; }

namespace {

// A plugin of ABI 2.4 or older reads no tp_case.mma and would run mma_sync: a case of
// another family is refused before it reaches the plugin ("" when it may go).
std::string mma_problem(const tp_backend_api& api, const std::string& name, const OperatingPoint& op) {
  if (op.mma == Mma::mma_sync || api.abi_major > 2 || api.abi_minor >= 5) return "";
  return "mma: plugin '" + name + "' speaks ABI " + std::to_string(api.abi_major) + "." +
         std::to_string(api.abi_minor) + ", which cannot take a matrix instruction family (ABI 2.5); allowed: mma_sync";
}

}  // namespace

std::string Backend::unsupported_reason(int device, const OperatingPoint& op, const std::string& gpu_model) const {
  const auto problems = op.problems();
  if (!problems.empty()) return problems.front().what();
  if (std::string why = mma_problem(*api_, name_, op); !why.empty()) return why;
  if (device < 0 || device >= static_cast<int>(devices_.size())) {
    return "device " + std::to_string(device) + " does not exist on backend '" + name_ + "' (" +
           (devices_.empty() ? "no devices: " + no_device_reason_ : std::to_string(devices_.size()) + " devices") + ")";
  }
  const tp_case c = to_tp_case(op, gpu_model.empty() ? nullptr : gpu_model.c_str());
  char why[512] = {0};
  std::lock_guard<std::mutex> guard(lock_->mutex);
  if (api_->supports(device, &c, why, sizeof why) != 0) return "";
  std::string reason = bounded(why);
  return reason.empty() ? "not supported by backend '" + name_ + "'" : reason;
}

namespace {

// Far above any real list (a case has ~10 stage costs, ~30 metrics, a few artifacts).
constexpr std::int64_t kMaxListEntries = 1 << 20;

// What is wrong with the result's lists, or "": a count outside 0..kMaxListEntries or a
// non-zero count without its array.
std::string list_problem(const tp_result& r) {
  auto check = [](const char* name, std::int64_t count, const void* array) -> std::string {
    if (count < 0 || count > kMaxListEntries)
      return std::string(name) + " " + std::to_string(count) + " (allowed: 0.." + std::to_string(kMaxListEntries) + ")";
    if (count > 0 && array == nullptr) return std::string(name) + " " + std::to_string(count) + " with no array";
    return "";
  };
  for (const std::string& bad :
       {check("stage_cost_count", r.stage_cost_count, r.stage_costs), check("metric_count", r.metric_count, r.metrics),
        check("artifact_count", r.artifact_count, r.artifacts)})
    if (!bad.empty()) return bad;
  for (std::int32_t i = 0; i < r.artifact_count; ++i)
    if (r.artifacts[i].size > 0 && r.artifacts[i].data == nullptr)
      return "artifact " + std::to_string(i) + " has " + std::to_string(r.artifacts[i].size) + " bytes and no data";
  return "";
}

}  // namespace

int Backend::run(int device, const OperatingPoint& op, const tp_run_options& options, tp_result& result,
                 const std::string& gpu_model) const {
  std::memset(&result, 0, sizeof result);
  result.struct_size = sizeof result;
  fill_nan(result);
  if (const std::string why = mma_problem(*api_, name_, op); !why.empty()) {
    result.status = TP_ERR_UNSUPPORTED;
    std::snprintf(result.message, sizeof result.message, "%s", why.c_str());
    return result.status;
  }
  const tp_case c = to_tp_case(op, gpu_model.empty() ? nullptr : gpu_model.c_str());
  std::lock_guard<std::mutex> guard(lock_->mutex);
  int status = api_->run_case(device, &c, &options, &result);
  result.message[sizeof result.message - 1] = '\0';
  result.key_distribution[sizeof result.key_distribution - 1] = '\0';
  // The lists are read only if they are consistent: a plugin bug must be an error
  // naming the plugin, not a crash of the host reading past them.
  if (const std::string bad = list_problem(result); !bad.empty()) {
    status = result.status = TP_ERR_RUNTIME;
    std::snprintf(result.message, sizeof result.message, "plugin %s returned an inconsistent result: %s", name_.c_str(),
                  bad.c_str());
  }
  return status;
}

void Backend::release(tp_result& result) const {
  std::lock_guard<std::mutex> guard(lock_->mutex);
  if (api_->release_result != nullptr) api_->release_result(&result);
}

std::vector<std::string> PluginHost::search_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("TILEPATH_PLUGIN_PATH"); env != nullptr && *env != '\0') {
    std::string paths = env;
    std::size_t start = 0;
    while (start <= paths.size()) {
      const std::size_t end = paths.find(':', start);
      std::string item = paths.substr(start, end == std::string::npos ? std::string::npos : end - start);
      if (!item.empty()) dirs.push_back(item);
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  const fs::path exe_dir = executable_dir();
  if (!exe_dir.empty()) {
    dirs.push_back(exe_dir.string());
    dirs.push_back((exe_dir / "plugins").string());
    dirs.push_back((exe_dir.parent_path() / "plugins").string());
    dirs.push_back((exe_dir.parent_path() / "lib" / "tilepath").string());
  }
  dirs.push_back(TILEPATH_BUILD_PLUGIN_DIR);
  dirs.push_back(TILEPATH_INSTALL_PLUGIN_DIR);
  return dirs;
}

void PluginHost::discover() {
  std::set<std::string> seen_files;
  for (const auto& entry : search_dirs()) {
    std::error_code ec;
    const fs::path p(entry);
    std::vector<fs::path> candidates;
    if (fs::is_regular_file(p, ec)) {
      candidates.push_back(p);  // TILEPATH_PLUGIN_PATH may name files
    } else if (fs::is_directory(p, ec)) {
      for (const auto& f : fs::directory_iterator(p, ec)) {
        if (!looks_like_plugin(f.path())) continue;
        // A plugin's name on something that cannot be loaded is reported, not skipped silently.
        std::error_code status_ec;
        const fs::file_status st = fs::status(f.path(), status_ec);
        if (status_ec)
          problems_.push_back({f.path().string(), "cannot resolve: " + status_ec.message()});
        else if (fs::is_directory(st))
          problems_.push_back({f.path().string(), "a directory, not a plugin file"});
        else if (!fs::is_regular_file(st))
          problems_.push_back({f.path().string(), "not a regular file"});
        else
          candidates.push_back(f.path());
      }
      std::sort(candidates.begin(), candidates.end());
    }
    for (const auto& file : candidates) {
      const std::string canonical = fs::weakly_canonical(file, ec).string();
      if (!seen_files.insert(canonical).second) continue;
      load_file(canonical);
    }
  }
}

const Backend* PluginHost::load_file(const std::string& path) {
  auto fail = [&](const std::string& reason) -> const Backend* {
    problems_.push_back({path, reason});
    return nullptr;
  };
  // RTLD_LOCAL keeps each plugin's symbols (and statically linked runtimes) to itself.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return fail(std::string("cannot load: ") + (err != nullptr ? err : "unknown dlopen error"));
  }
  auto close_and_fail = [&](const std::string& reason) {
    dlclose(handle);
    return fail(reason);
  };
  auto entry = reinterpret_cast<tp_backend_entry_fn>(dlsym(handle, TILEPATH_BACKEND_ENTRY_SYMBOL));
  if (entry == nullptr) {
    return close_and_fail(std::string("not a tilepath backend: no symbol '") + TILEPATH_BACKEND_ENTRY_SYMBOL + "'");
  }
  const tp_backend_api* api = entry(TILEPATH_ABI_MAJOR, TILEPATH_ABI_MINOR);
  if (api == nullptr) {
    const std::string host_abi = std::to_string(TILEPATH_ABI_MAJOR) + "." + std::to_string(TILEPATH_ABI_MINOR);
    // Which ABI does it speak? Ask again with each older major; the first three fields
    // of the table (struct_size, abi_major, abi_minor) are the same in every major.
    for (uint32_t major = TILEPATH_ABI_MAJOR - 1; major >= 1; --major) {
      const tp_backend_api* older = entry(major, 0);
      if (older != nullptr && older->struct_size >= 3 * sizeof(uint32_t))
        return close_and_fail("ABI version mismatch: plugin speaks " + std::to_string(older->abi_major) + "." +
                              std::to_string(older->abi_minor) + ", host speaks " + host_abi +
                              "; rebuild the plugin against this tilepath's backends/abi/tilepath_backend.h");
    }
    return close_and_fail("the plugin does not support host ABI " + host_abi);
  }
  if (api->abi_major != TILEPATH_ABI_MAJOR) {
    return close_and_fail("ABI version mismatch: plugin speaks " + std::to_string(api->abi_major) + "." +
                          std::to_string(api->abi_minor) + ", host speaks " + std::to_string(TILEPATH_ABI_MAJOR) + "." +
                          std::to_string(TILEPATH_ABI_MINOR));
  }
  // The fields up to release_result are this major's .0; a shorter table is corrupt.
  constexpr std::size_t kMajorBaseSize =
      offsetof(tp_backend_api, release_result) + sizeof(tp_backend_api::release_result);
  if (api->struct_size < kMajorBaseSize) {
    return close_and_fail("plugin API struct is " + std::to_string(api->struct_size) + " bytes, ABI " +
                          std::to_string(TILEPATH_ABI_MAJOR) + ".0 needs " + std::to_string(kMajorBaseSize));
  }
  if (api->name == nullptr || *api->name == '\0' || api->init == nullptr || api->device_count == nullptr ||
      api->device_info == nullptr || api->supports == nullptr || api->run_case == nullptr) {
    return close_and_fail("plugin API table is incomplete (missing name or a required function)");
  }
  const std::string name = api->name;
  for (const auto& b : backends_) {
    if (b->name() == name) {
      return close_and_fail("backend '" + name + "' is already loaded from " + b->file());
    }
  }
  char error[512] = {0};
  if (api->init(error, sizeof error) != 0) {
    const std::string reason = bounded(error);
    return close_and_fail("init failed: " + (reason.empty() ? std::string("no reason given") : reason));
  }

  std::unique_ptr<Backend> backend(new Backend());
  backend->handle_ = handle;
  backend->api_ = api;
  backend->lock_ = std::make_unique<Backend::Lock>();
  backend->name_ = name;
  backend->version_ = api->version != nullptr ? api->version : "";
  backend->file_ = path;
  const int32_t count = api->device_count();
  for (int32_t i = 0; i < count; ++i) {
    tp_device_info info{};
    info.struct_size = sizeof info;
    if (api->device_info(i, &info) != 0) continue;
    DeviceInfo d;
    d.index = i;
    d.name = bounded(info.name);
    d.arch = bounded(info.arch);
    d.sm_count = info.sm_count;
    d.memory_bytes = static_cast<double>(info.memory_bytes);
    d.bandwidth_gbps = info.bandwidth_gbps;
    d.l2_bytes = static_cast<double>(info.l2_bytes);
    d.clock_mhz = info.clock_mhz;
    // ABI 2.6; an older plugin's shorter struct leaves it empty (the host zeroed it).
    if (info.struct_size >= offsetof(tp_device_info, uid) + sizeof info.uid) d.uid = bounded(info.uid);
    backend->devices_.push_back(std::move(d));
  }
  // ABI 2.4: the compiled kernels, where the plugin's table has them.
  const bool lists_kernels = api->struct_size >= offsetof(tp_backend_api, kernel_record) + sizeof(api->kernel_record);
  if (lists_kernels && api->kernel_count != nullptr && api->kernel_record != nullptr) {
    const int32_t kernels = api->kernel_count();
    for (int32_t i = 0; i < kernels; ++i) {
      tp_kernel_record r{};
      r.struct_size = sizeof r;
      if (api->kernel_record(i, &r) != 0) continue;
      KernelRecordInfo k;
      k.name = bounded(r.name);
      k.symbol = bounded(r.symbol);
      k.binary_sha256 = bounded(r.binary_sha256);
      k.registers = r.registers;
      k.accum_registers = r.accum_registers;
      k.shared_bytes = r.shared_bytes;
      k.scratch_bytes = r.scratch_bytes;
      k.threads = r.threads;
      k.waves_per_simd = r.waves_per_simd;
      k.target_waves_per_simd = r.target_waves_per_simd;
      backend->kernels_.push_back(std::move(k));
    }
  }
  if (backend->devices_.empty()) {
    const char* reason = api->no_device_reason != nullptr ? api->no_device_reason() : nullptr;
    backend->no_device_reason_ = (reason != nullptr && *reason != '\0') ? reason : "the plugin reports no devices";
  }
  backends_.push_back(std::move(backend));
  return backends_.back().get();
}

const Backend* PluginHost::find(const std::string& name) const {
  for (const auto& b : backends_) {
    if (b->name() == name) return b.get();
  }
  return nullptr;
}

const Backend& PluginHost::get(const std::string& name) const {
  if (const Backend* b = find(name)) return *b;
  std::string msg = "no backend named '" + name + "'; loaded: ";
  if (backends_.empty()) msg += "none";
  for (std::size_t i = 0; i < backends_.size(); ++i) msg += (i ? "|" : "") + backends_[i]->name();
  for (const auto& p : problems_) msg += "; " + p.file + ": " + p.reason;
  if (backends_.empty()) msg += " (search path: set TILEPATH_PLUGIN_PATH)";
  throw std::runtime_error(msg);
}

}  // namespace tilepath
