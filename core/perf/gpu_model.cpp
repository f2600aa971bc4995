#include "core/perf/gpu_model.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/enum_names.h"
#include "core/perf/model_file.h"

namespace tilepath::perf {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

[[noreturn]] void fail(const std::string& file, const std::string& field, const std::string& problem) {
  fail_field(file, field, problem);
}

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : sep) + item;
  return out;
}

std::string read_string(const json& j, const std::string& key, const std::string& file) {
  return read_string_field(j, key, file);
}

// Every number is {"value": x, "unit": "...", "source": "..."}: the unit must be one
// of `units` (so a GB/s value is never read as TB/s) and the source must be given.
struct Quantity {
  double value = 0;
  std::string unit;
};
Quantity read_quantity(const json& parent, const std::string& key, const std::string& path,
                       const std::vector<std::string>& units, bool allow_zero, GpuModel& gpu) {
  const std::string& file = gpu.file;
  if (!parent.contains(key)) fail(file, path, "missing; expected {\"value\", \"unit\", \"source\"}");
  const json& q = parent[key];
  if (!q.is_object()) fail(file, path, "must be an object {\"value\", \"unit\", \"source\"}");
  if (!q.contains("value") || !q["value"].is_number()) fail(file, path + ".value", "missing or not a number");
  const double value = q["value"].get<double>();
  if (!(value > 0 || (allow_zero && value == 0))) {
    fail(file, path + ".value", "must be " + std::string(allow_zero ? ">= 0" : "> 0") + ", got " + q["value"].dump());
  }
  if (!q.contains("unit") || !q["unit"].is_string())
    fail(file, path + ".unit", "missing; allowed: " + join(units, "|"));
  const std::string unit = q["unit"].get<std::string>();
  if (std::find(units.begin(), units.end(), unit) == units.end()) {
    fail(file, path + ".unit", "'" + unit + "' is not allowed; allowed: " + join(units, "|"));
  }
  if (!q.contains("source") || !q["source"].is_string() || q["source"].get<std::string>().empty()) {
    fail(file, path + ".source",
         "missing; name the datasheet/whitepaper and URL, the measurement, or say 'estimate: how derived'");
  }
  gpu.sources[path] = q["source"].get<std::string>();
  return {value, unit};
}

double read_value(const json& j, const std::string& key, const std::vector<std::string>& units, GpuModel& gpu) {
  return read_quantity(j, key, key, units, false, gpu).value;
}

// Paths every file must state (supported or not), so a missing one is never
// mistaken for "unsupported".
const std::vector<std::string> kRequiredPaths = {"bf16_bf16", "e4m3_e4m3", "bf16_e4m3"};

void read_matrix_paths(const json& j, GpuModel& gpu) {
  const std::string& file = gpu.file;
  if (!j.contains("matrix_paths") || !j["matrix_paths"].is_object()) {
    fail(file, "matrix_paths", "missing or not an object; required keys: " + join(kRequiredPaths, ", "));
  }
  for (const auto& [name, p] : j["matrix_paths"].items()) {
    const std::string path = "matrix_paths." + name;
    if (!p.is_object()) fail(file, path, "must be an object {\"supported\", \"dense_tflops\", \"note\"}");
    MatrixPath mp;
    mp.name = name;
    if (!p.contains("supported") || !p["supported"].is_boolean())
      fail(file, path + ".supported", "missing or not true/false");
    mp.supported = p["supported"].get<bool>();
    // An unsupported path has no rate (0); a supported one must have one.
    mp.dense_tflops = read_quantity(p, "dense_tflops", path + ".dense_tflops", {"TFLOP/s"}, !mp.supported, gpu).value;
    if (!p.contains("note") || !p["note"].is_string())
      fail(file, path + ".note", "missing (a string; say why when unsupported)");
    mp.note = p["note"].get<std::string>();
    if (!mp.supported && mp.note.empty()) fail(file, path + ".note", "an unsupported path must say why");
    gpu.matrix_paths.push_back(mp);
  }
  for (const auto& required : kRequiredPaths) {
    if (gpu.path(required) == nullptr)
      fail(file, "matrix_paths." + required, "missing; required keys: " + join(kRequiredPaths, ", "));
  }
}

// Every family the operating point's mma names, each stated (supported or not), so a
// missing one is never mistaken for "unsupported".
void read_matrix_instructions(const json& j, GpuModel& gpu) {
  const std::string& file = gpu.file;
  const std::vector<std::string> required = names::all_names<Mma>();
  if (!j.contains("matrix_instructions") || !j["matrix_instructions"].is_object())
    fail(file, "matrix_instructions", "missing or not an object; required keys: " + join(required, ", "));
  for (const auto& [name, p] : j["matrix_instructions"].items()) {
    const std::string path = "matrix_instructions." + name;
    if (std::find(required.begin(), required.end(), name) == required.end())
      fail(file, path, "unknown matrix instruction family; allowed: " + join(required, "|"));
    if (!p.is_object()) fail(file, path, "must be an object {\"supported\", \"note\"}");
    MatrixInstruction mi;
    mi.name = name;
    if (!p.contains("supported") || !p["supported"].is_boolean())
      fail(file, path + ".supported", "missing or not true/false");
    mi.supported = p["supported"].get<bool>();
    if (!p.contains("note") || !p["note"].is_string() || p["note"].get<std::string>().empty())
      fail(file, path + ".note",
           "missing (a string: what the instruction is here, or why it is missing, and a source)");
    mi.note = p["note"].get<std::string>();
    gpu.matrix_instructions.push_back(mi);
  }
  for (const auto& name : required)
    if (gpu.instruction(name) == nullptr)
      fail(file, "matrix_instructions." + name, "missing; required keys: " + join(required, ", "));
}

bool is_models_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir / "gpus", ec);
}

// The file this code is linked into: the plugin .so when inside a plugin, else the executable.
fs::path this_binary_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&this_binary_dir), &info) != 0 && info.dli_fname != nullptr) {
    std::error_code ec;
    const fs::path p = fs::canonical(info.dli_fname, ec);
    if (!ec) return p.parent_path();
  }
  return {};
}

fs::path executable_dir() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : p.parent_path();
}

}  // namespace

const MatrixPath* GpuModel::path(const std::string& path_name) const {
  for (const auto& p : matrix_paths) {
    if (p.name == path_name) return &p;
  }
  return nullptr;
}

const MatrixInstruction* GpuModel::instruction(const std::string& name) const {
  for (const auto& mi : matrix_instructions)
    if (mi.name == name) return &mi;
  return nullptr;
}

GpuModel parse_gpu_model(const json& j, const std::string& id, const std::string& file) {
  GpuModel gpu;
  gpu.id = id;
  gpu.file = file;
  if (!j.is_object()) throw std::runtime_error(file + ": the top level must be a JSON object");
  gpu.name = read_string(j, "name", file);
  gpu.vendor = read_string(j, "vendor", file);
  gpu.arch = read_string(j, "arch", file);
  // AMD counts compute units where NVIDIA counts SMs; both mean "the unit a CTA runs on".
  const double sms = read_value(j, "sm_count", {"SM", "CU"}, gpu);
  if (sms != static_cast<int>(sms)) fail(file, "sm_count.value", "must be a whole number");
  gpu.sm_count = static_cast<int>(sms);
  gpu.clock_mhz = read_value(j, "boost_clock", {"MHz"}, gpu);
  gpu.hbm_bandwidth_gbps = read_value(j, "hbm_bandwidth", {"GB/s"}, gpu);
  gpu.read_bandwidth_gbps = read_value(j, "read_bandwidth", {"GB/s"}, gpu);
  gpu.l2_bytes = read_value(j, "l2_bytes", {"bytes"}, gpu);
  gpu.l2_read_bandwidth_gbps = read_value(j, "l2_read_bandwidth", {"GB/s"}, gpu);
  gpu.memory_bytes = read_value(j, "memory_bytes", {"bytes"}, gpu);
  gpu.smem_per_sm_bytes = read_value(j, "smem_per_sm", {"bytes"}, gpu);
  gpu.fp32_tflops = read_value(j, "fp32_tflops", {"TFLOP/s"}, gpu);
  gpu.cvt_fp8_operand_per_sm_per_clk = read_value(j, "cvt_fp8_operand", {"elements/SM/clk", "elements/CU/clk"}, gpu);
  gpu.sfu_exp_per_sm_per_clk = read_value(j, "sfu_exp", {"ops/SM/clk", "ops/CU/clk"}, gpu);
  gpu.dram_latency_ns = read_value(j, "dram_latency", {"ns"}, gpu);
  gpu.launch_overhead_us = read_value(j, "launch_overhead", {"us"}, gpu);
  read_matrix_paths(j, gpu);
  read_matrix_instructions(j, gpu);
  if (gpu.read_bandwidth_gbps > gpu.hbm_bandwidth_gbps) {
    fail(file, "read_bandwidth.value", "exceeds hbm_bandwidth (a streaming read cannot beat the datasheet peak)");
  }
  return gpu;
}

GpuModel load_gpu_model_file(const std::string& path) {
  return parse_gpu_model(read_model_json(path, "GPU model"), fs::path(path).stem().string(), path);
}

std::string models_dir() {
  std::vector<fs::path> tried;
  if (const char* env = std::getenv("TILEPATH_MODELS_DIR"); env != nullptr && env[0] != '\0') {
    // An explicit setting that points nowhere is a mistake worth reporting, not skipping.
    if (!is_models_dir(env)) {
      throw std::runtime_error(std::string("TILEPATH_MODELS_DIR=") + env + " has no gpus/ folder");
    }
    return env;
  }
  for (const fs::path& base : {this_binary_dir(), executable_dir()}) {
    if (base.empty()) continue;
    // <bin>/../share (executables) and <lib>/tilepath/../../share (installed plugins).
    for (const fs::path& candidate :
         {base / ".." / "share" / "tilepath" / "models", base / ".." / ".." / "share" / "tilepath" / "models"}) {
      if (is_models_dir(candidate)) return fs::weakly_canonical(candidate).string();
      tried.push_back(candidate);
    }
  }
#ifdef TILEPATH_SOURCE_MODELS_DIR
  if (is_models_dir(TILEPATH_SOURCE_MODELS_DIR)) return TILEPATH_SOURCE_MODELS_DIR;
  tried.emplace_back(TILEPATH_SOURCE_MODELS_DIR);
#endif
  std::vector<std::string> names;
  for (const auto& t : tried) names.push_back(t.string());
  throw std::runtime_error("no models directory (with a gpus/ folder) found; set TILEPATH_MODELS_DIR. Tried: " +
                           join(names, ", "));
}

std::vector<GpuModel> load_gpu_models(const std::string& dir) {
  std::vector<GpuModel> out;
  for (const auto& f : model_files(dir, "gpus")) out.push_back(load_gpu_model_file(f));
  return out;
}

GpuModel load_gpu_model(const std::string& id, const std::string& dir) {
  const fs::path file = fs::path(dir) / "gpus" / (id + ".json");
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    std::vector<std::string> known;
    if (fs::is_directory(fs::path(dir) / "gpus", ec)) {
      for (const auto& entry : fs::directory_iterator(fs::path(dir) / "gpus")) {
        if (entry.path().extension() == ".json") known.push_back(entry.path().stem().string());
      }
    }
    std::sort(known.begin(), known.end());
    throw std::runtime_error("gpu_model: unknown GPU model '" + id + "'; allowed: " + join(known, ", "));
  }
  return load_gpu_model_file(file.string());
}

}  // namespace tilepath::perf
