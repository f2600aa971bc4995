#pragma once
// What the runtime says about the launched main kernel: registers, shared
// memory, occupancy, and which embedded cubin it came from.

#include <string>

#include "backends/cuda/decode_launch.h"

namespace tilepath::cuda {

struct KernelMetadata {
  std::string name;          // KernelInfo::name (human-readable variant name)
  std::string mangled_name;  // cudaFuncGetName
  std::string cubin_sha256;  // "" when the cubin could not be identified (see cubin_note)
  std::string cubin_note;    // how it was identified, or why not
  std::size_t cubin_bytes = 0;
  int regs_per_thread = -1;
  int smem_static_bytes = -1;
  int smem_dynamic_bytes = -1;
  int local_bytes_per_thread = -1;   // spills / stack
  int blocks_per_sm = 0;             // cudaOccupancyMaxActiveBlocksPerMultiprocessor
  double occupancy_theoretical = 0;  // active warps / max warps per SM
  int waves = 0;                     // ceil(CTAs / (blocks_per_sm x SMs))
  dim3 grid, block;
  dim3 cluster{1, 1, 1};  // thread-block cluster dims of the launch
  int tile_tokens = 0;
};

KernelMetadata describe_kernel(const KernelInfo& info, int device);

}  // namespace tilepath::cuda
