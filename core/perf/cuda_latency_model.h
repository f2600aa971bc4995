#pragma once
// A GPU model of the CUDA backend's decode kernels (backends/cuda), used by the cost model
// for NVIDIA GPUs: the kernel's own launch plan (core/perf/cuda_kernel_plan.h: warps, ring
// depth, CTAs per SM, kv heads per CTA, split-KV count, tile size) and a tile interval
// from the GPU's datasheet rates and a few coefficients fitted to measured H200 runs
// (models/fits/<gpu>.json, docs/sim-model.md). A GPU without its own fit uses the H200
// fit, and its predictions are model-only.

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include "core/operating_point.h"

#include "core/perf/gpu_model.h"
#include "core/stage.h"

namespace tilepath::perf {

// What the CUDA backend launches for op on a GPU with sm_count SMs.
struct CudaKernelPlan {
  int mma_warps_per_head = 0, stages = 0;  // the ring shape
  int kv_heads_per_cta = 1;
  int converter_warps = 0;  // separate_kv: one per MMA warp
  int threads = 0;
  int smem_bytes = 0;  // dynamic shared memory per CTA
  int ctas_per_sm = 0;
  int head_chunks = 1;  // CTAs sharing one kv head (8 query heads each)
  int splits = 1, split_tokens = 0;
  int tile_tokens = 0;  // tokens per pipeline step of one kv head
  long long tiles_per_cta = 0;
  long long ctas = 0, resident_ctas = 0, waves = 0;
};
// regs_per_thread: the registers per thread of the case's main kernel when known (a case
// records them; the one- and two-kv-head kernels of a variant use about as many), else 0:
// the occupancy then counts shared memory and threads only.
CudaKernelPlan plan_cuda_kernel(const OperatingPoint& op, int sm_count, int regs_per_thread = 0);

// The fitted coefficients (models/fits/<gpu>.json), each with its source.
struct CudaKernelFit {
  std::string file;
  std::string fitted_on;            // GPU id of the measurements; != the modelled GPU: model-only
  double launch_us = 0;             // once per step: launch, Q, prologue, the epilogue of the last wave
  double wave_fill_us = 0;          // per wave of CTAs: the first tiles' ramp
  double bandwidth_efficiency = 0;  // share of the measured read bandwidth the ring streams at
  double loaded_latency_ns = 0;     // a tile's load latency under load (with L2 hits: 0.4 of it)
  double compute_efficiency = 0;    // datasheet compute time x this = the MMA warps' time per tile
  double converter_efficiency = 0;  // separate_kv: converter time per converted element x this
  double combine_us = 0;            // the split-KV merge kernel
  std::map<std::string, std::string> sources;
};
// The coefficient names in the order a fit varies them.
const std::vector<std::string>& cuda_kernel_fit_names();
std::vector<double> fit_values(const CudaKernelFit& f);
void set_fit_values(CudaKernelFit& f, const std::vector<double>& values);

CudaKernelFit parse_cuda_kernel_fit(const nlohmann::json& j, const std::string& file);
// models/fits/<gpu_id>.json, else models/fits/h200.json (fitted_on says which).
CudaKernelFit load_cuda_kernel_fit(const std::string& gpu_id, const std::string& dir = models_dir());

struct CudaLatencyEstimate {
  CudaKernelPlan plan;
  bool served_from_l2 = false;
  double memory_us = 0;         // per CTA step: the step's bytes at the CTAs' share of bandwidth
  double latency_bound_us = 0;  // per step: loaded latency over the tiles in flight per warp
  double compute_us = 0;        // per step: the MMA warps (separate_kv: the slower of converter and MMA warps)
  double ii_us = 0;             // max of the three
  std::string limit;            // "memory", "ring latency", "compute" or "converter"
  double latency_us = 0;
  // The parts of one CTA step by stage (k_load, v_load: the memory time by byte share;
  // compute stages as the model times them; combine: the merge kernel), all modelled.
  StageCosts stage_us;
};
CudaLatencyEstimate estimate_cuda_latency(const OperatingPoint& op, const GpuModel& gpu, const CudaKernelFit& fit);

}  // namespace tilepath::perf
