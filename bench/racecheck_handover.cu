// A hand-over between two consumer warpgroups through shared memory, alone, for
// compute-sanitizer: the second warpgroup stores its running max, sum and O (12 words a
// thread, as at D = 128), a 256-thread named barrier follows, and the first warpgroup loads
// them. The two-tile-group wgmma kernels merged their warpgroups this way and racecheck
// reported hazards between exactly those stores and loads (docs/perf-notes.md, "wgmma CTA
// layouts"); this program tells whether racecheck flags the pattern itself:
//
//   named        warpgroup 1 stores, bar.sync 3/4 over 256 threads, warpgroup 0 loads; the
//                producer warp (the ninth) has returned, as in the kernel
//   after_bulk   the same, on a buffer that a bulk copy (the async proxy, as TMA) filled first
//                and warpgroup 0 waited for on an mbarrier, as a ring slot is
//   syncthreads  the same stores and loads, __syncthreads instead of the named barriers (the
//                producer warp stays)
//   no_barrier   the control: as named without the barrier between the stores and the loads,
//                a real race that racecheck must report (and the loads may miss the stores)
//
// Each variant checks every loaded word against what was stored and exits 1 on a mismatch.
// Build and run on an sm_90a machine, from the repository root:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I. -o racecheck_handover bench/racecheck_handover.cu
//   for v in named after_bulk syncthreads no_barrier; do
//     compute-sanitizer --tool racecheck --error-exitcode 3 ./racecheck_handover $v; done
#include <cstdio>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#include "backends/cuda/kernels/wgmma_primitives.cuh"

namespace {

using namespace tilepath::cuda::kernels;

constexpr int kGroupThreads = 128;                // one consumer warpgroup
constexpr int kThreads = 2 * kGroupThreads + 32;  // two warpgroups and the producer warp
constexpr int kWords = 12;                        // the hand-over of D = 128: m, l of 2 heads, 8 of O
constexpr int kBufferBytes = kWords * kGroupThreads * 4;

enum class Variant { named, after_bulk, syncthreads, no_barrier };

// Named barrier kId over the two consumer warpgroups (both immediates in the SASS).
template <int kId>
__device__ __forceinline__ void consumer_pair_barrier() {
  asm volatile("bar.sync %0, %1;\n" ::"n"(kId), "n"(2 * kGroupThreads) : "memory");
}

__device__ float handed_value(int block, int word, int tid) { return float(block * 100000 + word * 1000 + tid); }

template <Variant V>
__global__ void __launch_bounds__(kThreads) handover_kernel(const float* fill, int* mismatches) {
  __shared__ __align__(128) float buffer[kWords * kGroupThreads];
  __shared__ __align__(8) unsigned long long full;
  const int warp = threadIdx.x / 32;
  const int warpgroup = warp / 4;  // 2: the producer warp
  const int tid = threadIdx.x % kGroupThreads;
  const std::uint32_t buf = smem_addr(buffer), bar = smem_addr(&full);
  if (threadIdx.x == 0) mbarrier_init(bar, 1);
  fence_mbarrier_init();
  __syncthreads();

  if (warpgroup == 2) {  // the producer
    if (V == Variant::after_bulk && threadIdx.x % 32 == 0) {
      mbarrier_arrive_expect_tx(bar, kBufferBytes);
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(buf),
          "l"(fill), "r"(kBufferBytes), "r"(bar)
          : "memory");
    }
    if (V != Variant::syncthreads) return;
  } else if (V == Variant::after_bulk && warpgroup == 0) {
    mbarrier_wait(bar, 0);  // the slot's bytes landed; the first warpgroup reads them
    if (lds_f32(buf + tid * 4) != fill[tid]) atomicAdd(mismatches, 1);
  }

  const auto word = [&](int i) { return buf + (i * kGroupThreads + tid) * 4; };
  if (V == Variant::syncthreads) {
    __syncthreads();
  } else if (warpgroup < 2) {
    consumer_pair_barrier<3>();  // both warpgroups done with the buffer
  }
  if (warpgroup == 1) {
    for (int i = 0; i < kWords; ++i) sts_f32(word(i), handed_value(blockIdx.x, i, tid));
  }
  if (V == Variant::syncthreads) {
    __syncthreads();
  } else if (V != Variant::no_barrier && warpgroup < 2) {
    consumer_pair_barrier<4>();  // the second warpgroup's words written
  }
  if (warpgroup != 0) return;
  for (int i = 0; i < kWords; ++i)
    if (lds_f32(word(i)) != handed_value(blockIdx.x, i, tid)) atomicAdd(mismatches, 1);
}

bool check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  return false;
}

template <Variant V>
int run(const char* name) {
  constexpr int kBlocks = 264;  // two CTAs per SM of an H200, as the B = 1 grids
  std::vector<float> host(kWords * kGroupThreads);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = float(i) * 0.5f;
  float* fill = nullptr;
  int* mismatches = nullptr;
  if (!check(cudaMalloc(&fill, host.size() * sizeof(float)), "cudaMalloc") ||
      !check(cudaMalloc(&mismatches, sizeof(int)), "cudaMalloc") ||
      !check(cudaMemcpy(fill, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy") ||
      !check(cudaMemset(mismatches, 0, sizeof(int)), "cudaMemset"))
    return 2;
  handover_kernel<V><<<kBlocks, kThreads>>>(fill, mismatches);
  int count = -1;
  if (!check(cudaGetLastError(), "launch") || !check(cudaDeviceSynchronize(), "kernel") ||
      !check(cudaMemcpy(&count, mismatches, sizeof(int), cudaMemcpyDeviceToHost), "cudaMemcpy"))
    return 2;
  cudaFree(fill);
  cudaFree(mismatches);
  std::printf("%s: %d CTAs, %d mismatched words\n", name, kBlocks, count);
  return count == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const char* v = argc > 1 ? argv[1] : "";
  if (std::strcmp(v, "named") == 0) return run<Variant::named>(v);
  if (std::strcmp(v, "after_bulk") == 0) return run<Variant::after_bulk>(v);
  if (std::strcmp(v, "syncthreads") == 0) return run<Variant::syncthreads>(v);
  if (std::strcmp(v, "no_barrier") == 0) return run<Variant::no_barrier>(v);
  std::fprintf(stderr, "usage: %s named|after_bulk|syncthreads|no_barrier\n", argv[0]);
  return 2;
}
