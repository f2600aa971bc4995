#pragma once
// The launch every decode kernel family shares: the kernel's shared-memory limit raised once,
// a programmatic dependent launch, and what was launched recorded for the case's metadata.

#include <cuda_runtime.h>

#include "backends/cuda/decode_launch.h"

namespace tilepath::cuda::kernels {

// log2(page_size) when it is a power of two, else -1 (KernelParams::page_shift).
inline int page_shift_of(int page_size) { return (page_size & (page_size - 1)) == 0 ? __builtin_ctz(page_size) : -1; }

// Raises the kernel's dynamic shared-memory limit (and asks for all of L1 as shared memory)
// the first time: raised is the caller's flag for this kernel (the host serialises plugin calls).
template <class Params>
cudaError_t raise_smem_limit_once(void (*kernel)(Params), int smem_bytes, bool& raised) {
  if (raised) return cudaSuccess;
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
  if (e != cudaSuccess) return e;
  // All of L1 as shared memory, so two ~100 KB rings fit per SM (the default carveout may not).
  e = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
  if (e != cudaSuccess) return e;
  raised = true;
  return cudaSuccess;
}

// The CTAs of this kernel one SM holds at once, as the runtime computes it (registers, shared
// memory at the launch's carveout, threads): what the split policy fills; and its registers.
template <class Params>
cudaError_t kernel_resources(void (*kernel)(Params), int threads, int smem_bytes, bool& smem_limit_raised,
                             KernelResources* out) {
  if (const cudaError_t e = raise_smem_limit_once(kernel, smem_bytes, smem_limit_raised); e != cudaSuccess) return e;
  cudaFuncAttributes attr{};
  if (const cudaError_t e = cudaFuncGetAttributes(&attr, kernel); e != cudaSuccess) return e;
  out->regs_per_thread = attr.numRegs;
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&out->ctas_per_sm, kernel, threads, smem_bytes);
}

template <class Params>
cudaError_t launch_decode_kernel(void (*kernel)(Params), const Params& params, dim3 grid, dim3 block, int smem_bytes,
                                 int tile_tokens, bool& smem_limit_raised, cudaStream_t stream, KernelInfo* info) {
  if (const cudaError_t e = raise_smem_limit_once(kernel, smem_bytes, smem_limit_raised); e != cudaSuccess) return e;
  // Programmatic dependent launch: the CTAs become resident during the previous kernel's
  // tail (the kernels wait on it before reading or writing anything).
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem_bytes;
  config.stream = stream;
  config.attrs = &attr;
  config.numAttrs = 1;
  if (const cudaError_t e = cudaLaunchKernelEx(&config, kernel, params); e != cudaSuccess) return e;
  if (info) {
    info->func = reinterpret_cast<const void*>(kernel);
    info->grid = grid;
    info->block = block;
    info->smem_dynamic_bytes = smem_bytes;
    info->tile_tokens = tile_tokens;
  }
  return cudaGetLastError();
}

}  // namespace tilepath::cuda::kernels
