#pragma once
// The launch every decode kernel family shares: the kernel's shared-memory limit raised once,
// a programmatic dependent launch, and what was launched recorded for the case's metadata.

#include <cuda_runtime.h>

#include "backends/cuda/decode_launch.h"

namespace tilepath::cuda::kernels {

// log2(page_size) when it is a power of two, else -1 (KernelParams::page_shift).
inline int page_shift_of(int page_size) { return (page_size & (page_size - 1)) == 0 ? __builtin_ctz(page_size) : -1; }

// What the launches of one kernel remember (one static instance per kernel; the host
// serialises plugin calls): the dynamic shared-memory limit it has been raised to, its
// resources at its own shared memory (asked once: fixed per kernel), and the padded shared
// memory of its last CTAs-per-SM cap.
struct KernelLaunchState {
  int smem_limit = 0;
  bool resources_known = false;
  KernelResources resources;
  int cap = 0, capped_smem = 0;
};

// Raises the kernel's dynamic shared-memory limit to smem_bytes (and asks for all of L1 as
// shared memory) where it is lower.
template <class Params>
cudaError_t raise_smem_limit(void (*kernel)(Params), int smem_bytes, KernelLaunchState& state) {
  if (state.smem_limit >= smem_bytes) return cudaSuccess;
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
  if (e != cudaSuccess) return e;
  // All of L1 as shared memory, so two ~100 KB rings fit per SM (the default carveout may not).
  e = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
  if (e != cudaSuccess) return e;
  state.smem_limit = smem_bytes;
  return cudaSuccess;
}

// The dynamic shared memory at which the kernel holds at most cap CTAs per SM (cap > 0): its own
// smem_bytes where that already holds no more, else the least 128-byte multiple that does. An
// ablation kernel needs fewer registers than the real one; padding its shared memory keeps it at
// the real kernel's occupancy, the one its time is compared with.
template <class Params>
cudaError_t smem_for_ctas_per_sm(void (*kernel)(Params), int threads, int smem_bytes, int cap, KernelLaunchState& state,
                                 int* out) {
  *out = smem_bytes;
  if (cap <= 0) return cudaSuccess;
  if (state.cap == cap) {
    *out = state.capped_smem;
    return cudaSuccess;
  }
  int ctas = 0, padded = smem_bytes;
  if (const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, kernel, threads, smem_bytes);
      e != cudaSuccess)
    return e;
  if (ctas > cap) {
    int device = 0, per_sm = 0, reserved = 0;
    if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
    if (const cudaError_t e = cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device);
        e != cudaSuccess)
      return e;
    if (const cudaError_t e = cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device);
        e != cudaSuccess)
      return e;
    // cap + 1 CTAs of (padded + reserved) bytes no longer fit in the SM's shared memory
    padded = (per_sm / (cap + 1) - reserved + 1 + 127) / 128 * 128;
    if (const cudaError_t e = raise_smem_limit(kernel, padded, state); e != cudaSuccess) return e;
    if (const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, kernel, threads, padded);
        e != cudaSuccess)
      return e;
    if (ctas != cap) return cudaErrorInvalidConfiguration;  // no padding holds exactly cap CTAs
  }
  state.cap = cap;
  state.capped_smem = padded;
  *out = padded;
  return cudaSuccess;
}

// The CTAs of this kernel one SM holds at once, as the runtime computes it (registers, shared
// memory at the launch's carveout, threads): what the split policy fills; and its registers.
template <class Params>
cudaError_t kernel_resources(void (*kernel)(Params), int threads, int smem_bytes, KernelLaunchState& state,
                             KernelResources* out) {
  if (!state.resources_known) {
    if (const cudaError_t e = raise_smem_limit(kernel, smem_bytes, state); e != cudaSuccess) return e;
    cudaFuncAttributes attr{};
    if (const cudaError_t e = cudaFuncGetAttributes(&attr, kernel); e != cudaSuccess) return e;
    state.resources.regs_per_thread = attr.numRegs;
    if (const cudaError_t e =
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&state.resources.ctas_per_sm, kernel, threads, smem_bytes);
        e != cudaSuccess)
      return e;
    state.resources_known = true;
  }
  *out = state.resources;
  return cudaSuccess;
}

template <class Params>
cudaError_t launch_decode_kernel(void (*kernel)(Params), const Params& params, dim3 grid, dim3 block, int kernel_smem,
                                 int tile_tokens, int ctas_per_sm_cap, KernelLaunchState& state, cudaStream_t stream,
                                 KernelInfo* info, int cluster_y = 1) {
  if (const cudaError_t e = raise_smem_limit(kernel, kernel_smem, state); e != cudaSuccess) return e;
  int smem_bytes = kernel_smem;
  if (const cudaError_t e = smem_for_ctas_per_sm(kernel, int(block.x * block.y * block.z), kernel_smem, ctas_per_sm_cap,
                                                 state, &smem_bytes);
      e != cudaSuccess)
    return e;
  // Programmatic dependent launch: the CTAs become resident during the previous kernel's
  // tail (the kernels wait on it before reading or writing anything).
  cudaLaunchAttribute attrs[2]{};
  attrs[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attrs[0].val.programmaticStreamSerializationAllowed = 1;
  // A cluster of cluster_y CTAs along grid y is scheduled on one GPC at once.
  attrs[1].id = cudaLaunchAttributeClusterDimension;
  attrs[1].val.clusterDim.x = 1;
  attrs[1].val.clusterDim.y = static_cast<unsigned>(cluster_y);
  attrs[1].val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem_bytes;
  config.stream = stream;
  config.attrs = attrs;
  config.numAttrs = cluster_y > 1 ? 2 : 1;
  if (const cudaError_t e = cudaLaunchKernelEx(&config, kernel, params); e != cudaSuccess) return e;
  if (info) {
    info->func = reinterpret_cast<const void*>(kernel);
    info->grid = grid;
    info->block = block;
    info->cluster = dim3(1, unsigned(cluster_y), 1);
    info->smem_dynamic_bytes = smem_bytes;
    info->tile_tokens = tile_tokens;
  }
  return cudaGetLastError();
}

}  // namespace tilepath::cuda::kernels
