#include "backends/cuda/kernel_metadata.h"

#include <algorithm>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/embedded_cubins.h"

namespace tilepath::cuda {

KernelMetadata describe_kernel(const KernelInfo& info, int device) {
  KernelMetadata meta;
  meta.name = info.name ? info.name : "";
  meta.grid = info.grid;
  meta.block = info.block;
  meta.cluster = info.cluster;
  meta.smem_dynamic_bytes = int(info.smem_dynamic_bytes);
  meta.tile_tokens = info.tile_tokens;
  if (!info.func) {
    meta.cubin_note = "launch_decode reported no kernel function";
    return meta;
  }
  cudaFuncAttributes attr{};
  TP_CUDA_CHECK(cudaFuncGetAttributes(&attr, info.func));
  meta.regs_per_thread = attr.numRegs;
  meta.smem_static_bytes = int(attr.sharedSizeBytes);
  meta.local_bytes_per_thread = int(attr.localSizeBytes);

  const int threads = int(info.block.x * info.block.y * info.block.z);
  TP_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&meta.blocks_per_sm, info.func, threads, info.smem_dynamic_bytes));
  int max_threads_per_sm = 0, sm_count = 0;
  TP_CUDA_CHECK(cudaDeviceGetAttribute(&max_threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device));
  TP_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
  const int warps_per_block = (threads + 31) / 32;
  meta.occupancy_theoretical = double(meta.blocks_per_sm * warps_per_block) / (max_threads_per_sm / 32);
  const long long ctas = (long long)info.grid.x * info.grid.y * info.grid.z;
  const long long slots = (long long)std::max(1, meta.blocks_per_sm) * sm_count;
  meta.waves = int((ctas + slots - 1) / slots);

  const char* mangled = nullptr;
  TP_CUDA_CHECK(cudaFuncGetName(&mangled, info.func));
  meta.mangled_name = mangled ? mangled : "";
  const CubinScan& scan = own_cubins();
  if (!scan.error.empty()) {
    meta.cubin_note = scan.error;
  } else if (const EmbeddedCubin* cubin = find_cubin_defining(scan, meta.mangled_name)) {
    meta.cubin_sha256 = cubin->sha256;
    meta.cubin_bytes = cubin->size_bytes;
    meta.cubin_note = cubin->compressed
                          ? "cubin is compressed in the fatbin; not hashed"
                          : "sha256 of the sm_" + std::to_string(cubin->sm) + " ELF in .nv_fatbin of " + scan.file;
  } else {
    meta.cubin_note = "no embedded cubin defines " + meta.mangled_name;
  }
  return meta;
}

}  // namespace tilepath::cuda
