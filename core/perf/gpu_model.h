#pragma once
// Machine-readable GPU descriptions loaded from models/gpus/*.json.
// Every number in those files carries its source (datasheet URL, measurement).

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tilepath::perf {

struct MatrixPath {
  std::string name;  // "bf16_bf16", "e4m3_e4m3", "bf16_e4m3" (mixed) ...
  bool supported = false;
  double dense_tflops = 0;  // whole chip
  std::string note;         // e.g. "no BF16xE4M3 MMA on Hopper"
};

// A matrix instruction family (the operating point's mma: mma_sync, wgmma) and whether
// the GPU has it.
struct MatrixInstruction {
  std::string name;  // "mma_sync", "wgmma"
  bool supported = false;
  std::string note;  // what it is on this GPU, or why it is missing (with a source)
};

struct GpuModel {
  std::string id;    // file stem: "h100_sxm", "h200", "b200", "mi300x"
  std::string name;  // "NVIDIA H200 SXM"
  std::string vendor, arch;
  int sm_count = 0;
  double clock_mhz = 0;
  double hbm_bandwidth_gbps = 0;   // datasheet
  double read_bandwidth_gbps = 0;  // measured streaming read where known, else datasheet * efficiency
  double l2_bytes = 0;
  double memory_bytes = 0;
  double smem_per_sm_bytes = 0;
  double fp32_tflops = 0;
  double cvt_fp8_operand_per_sm_per_clk = 0;  // E4M3 -> 16-bit MMA operand conversions per SM per clock
  double sfu_exp_per_sm_per_clk = 0;
  std::vector<MatrixPath> matrix_paths;
  std::vector<MatrixInstruction> matrix_instructions;  // one per name of the field mma
  nlohmann::json* raw = nullptr;                       // not owned; unused by callers

  // ---- additions (sim engineer) ----
  std::string file;                   // the JSON file it was loaded from
  double l2_read_bandwidth_gbps = 0;  // used when an l2_warm case's KV fits in L2
  double dram_latency_ns = 0;         // first-byte latency: bounds bandwidth per CTA (Little's law)
  double launch_overhead_us = 0;      // added once per kernel launch
  // Source of every numeric field, keyed by its JSON path ("sm_count",
  // "matrix_paths.e4m3_e4m3.dense_tflops"): datasheet URL, measurement or "estimate: ...".
  std::map<std::string, std::string> sources;

  const MatrixPath* path(const std::string& name) const;
  const MatrixInstruction* instruction(const std::string& name) const;
};

// The KV counts as L2-resident only when it fills at most this share of L2
// (the rest holds Q, O, page tables and other tenants' lines).
inline constexpr double kL2UsableFraction = 0.75;
// L2 hit latency relative to DRAM latency, for the in-flight-bytes bound
// (0.42 measured on the H200: 142 ns vs 335 ns idle pointer chase).
inline constexpr double kL2LatencyFraction = 0.4;
// An l2_warm case whose KV (kv_bytes) fits in the usable share of the GPU's L2.
inline bool kv_served_from_l2(bool l2_warm, double kv_bytes, const GpuModel& gpu) {
  return l2_warm && kv_bytes <= kL2UsableFraction * gpu.l2_bytes;
}

// Parse one GPU file; `id` is its stem. Throws std::runtime_error naming the file and field.
GpuModel parse_gpu_model(const nlohmann::json& j, const std::string& id, const std::string& file);
GpuModel load_gpu_model_file(const std::string& path);

// Directory search (first with a gpus/ folder wins): $TILEPATH_MODELS_DIR (an error if it
// has none), <plugin or exe dir>/../share/tilepath/models and /../../share/tilepath/models
// (the build tree's copy; an install's lib/tilepath -> share), the source tree's models/.
// The loaders throw std::runtime_error naming the file and field on bad JSON.
std::string models_dir();
std::vector<GpuModel> load_gpu_models(const std::string& dir = models_dir());
GpuModel load_gpu_model(const std::string& id, const std::string& dir = models_dir());  // throws listing known ids

}  // namespace tilepath::perf
