// Does compute-sanitizer's racecheck see the cp.async ring's synchronization? A two-warp
// producer/consumer ring with the wgmma kernels' protocol, in three forms:
//   noinc   producer: cp.async, then cp.async.mbarrier.arrive.noinc on the slot's full barrier
//           (the cp.async ring of decode_wgmma.cuh)
//   lagged  producer: cp.async of tile t, commit, cp.async.wait_group 1 (tile t-1 landed), then an
//           ordinary mbarrier.arrive for tile t-1
//   stores  producer: ld.global + st.shared, then an ordinary mbarrier.arrive
// The consumer warp waits on the full barrier, reads the slot (other lanes' chunks), and frees
// it on the slot's empty barrier, which the producer waits on before it writes the slot again,
// in one of two ways (the second argument):
//   lanes   every lane arrives (the empty barrier counts 32)
//   elect   __syncwarp, then lane 0 arrives for the warp (it counts 1; the wgmma kernels' TMA
//           ring)
// Every form is checked against the expected sums first, so a hazard report can be read against
// a protocol that computes the right answer.
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I. -o racecheck_probe \
//     bench/results/wgmma-cp-async-ring/racecheck_probe.cu
//   ./racecheck_probe noinc lanes && compute-sanitizer --tool racecheck ./racecheck_probe noinc lanes
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#include "backends/cuda/kernels/device_primitives.cuh"
#include "backends/cuda/kernels/wgmma_primitives.cuh"

namespace {

using namespace tilepath::cuda::kernels;

constexpr int kStages = 2, kTiles = 64, kLanes = 32;
enum Form { kNoinc, kLagged, kStores };

__device__ __forceinline__ void arrive_full(Form form, std::uint32_t bar) {
  if (form == kNoinc) {
    cp_async_mbarrier_arrive_noinc(bar);
  } else {
    mbarrier_arrive(bar);
  }
}

__global__ void ring(const int4* src, long long* out, Form form, bool elect) {
  __shared__ alignas(16) int4 slot_data[kStages][kLanes];
  __shared__ alignas(8) std::uint64_t full[kStages], empty[kStages];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  auto bar = [](std::uint64_t* b) { return static_cast<std::uint32_t>(__cvta_generic_to_shared(b)); };
  if (threadIdx.x < kStages) {
    mbarrier_init(bar(&full[threadIdx.x]), kLanes);
    mbarrier_init(bar(&empty[threadIdx.x]), elect ? 1 : kLanes);
  }
  __syncthreads();
  if (warp == 1) {  // producer
    for (int tile = 0; tile < kTiles; ++tile) {
      const int slot = tile % kStages;
      if (tile >= kStages) mbarrier_wait(bar(&empty[slot]), ((tile / kStages) - 1) & 1);
      const int4* from = src + tile * kLanes + lane;
      if (form == kStores) {
        slot_data[slot][lane] = *from;
        arrive_full(form, bar(&full[slot]));
        continue;
      }
      cp_async_16(static_cast<std::uint32_t>(__cvta_generic_to_shared(&slot_data[slot][lane])), from, true);
      if (form == kNoinc) {
        arrive_full(form, bar(&full[slot]));
      } else {  // kLagged: arrive for the previous tile once its copy has landed
        cp_async_commit();
        cp_async_wait<1>();
        if (tile > 0) arrive_full(form, bar(&full[(tile - 1) % kStages]));
      }
    }
    if (form == kLagged) {
      cp_async_wait<0>();
      arrive_full(form, bar(&full[(kTiles - 1) % kStages]));
    }
    cp_async_wait_all();
  } else {  // consumer
    long long sum = 0;
    for (int tile = 0; tile < kTiles; ++tile) {
      const int slot = tile % kStages;
      mbarrier_wait(bar(&full[slot]), (tile / kStages) & 1);
      const int4 v = slot_data[slot][(lane + tile) % kLanes];  // another lane's chunk
      sum += v.x + v.y + v.z + v.w;
      if (elect) {
        __syncwarp();
        if (lane == 0) mbarrier_arrive(bar(&empty[slot]));
      } else {
        mbarrier_arrive(bar(&empty[slot]));
      }
    }
    out[lane] = sum;
  }
}

bool check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  return e == cudaSuccess;
}

}  // namespace

int main(int argc, char** argv) {
  const char* names[] = {"noinc", "lagged", "stores"};
  int form = -1;
  for (int f = 0; f < 3 && argc > 1; ++f)
    if (std::strcmp(argv[1], names[f]) == 0) form = f;
  const bool elect = argc > 2 && std::strcmp(argv[2], "elect") == 0;
  if (form < 0 || (argc > 2 && !elect && std::strcmp(argv[2], "lanes") != 0)) {
    std::fprintf(stderr, "usage: %s noinc|lagged|stores [lanes|elect]\n", argv[0]);
    return 2;
  }
  std::vector<int4> host(kTiles * kLanes);
  for (int i = 0; i < kTiles * kLanes; ++i) host[i] = int4{i, 2 * i, 3 * i, 4 * i};
  std::vector<long long> expected(kLanes, 0), got(kLanes, -1);
  for (int lane = 0; lane < kLanes; ++lane)
    for (int tile = 0; tile < kTiles; ++tile) expected[lane] += 10LL * (tile * kLanes + (lane + tile) % kLanes);
  int4* src = nullptr;
  long long* out = nullptr;
  if (!check(cudaMalloc(&src, host.size() * sizeof(int4)), "cudaMalloc") ||
      !check(cudaMalloc(&out, kLanes * sizeof(long long)), "cudaMalloc") ||
      !check(cudaMemcpy(src, host.data(), host.size() * sizeof(int4), cudaMemcpyHostToDevice), "cudaMemcpy") ||
      !check(cudaMemset(out, 0xff, kLanes * sizeof(long long)), "cudaMemset"))
    return 1;
  ring<<<1, 64>>>(src, out, static_cast<Form>(form), elect);
  if (!check(cudaGetLastError(), "launch") || !check(cudaDeviceSynchronize(), "ring") ||
      !check(cudaMemcpy(got.data(), out, kLanes * sizeof(long long), cudaMemcpyDeviceToHost), "cudaMemcpy"))
    return 1;
  int wrong = 0;
  for (int lane = 0; lane < kLanes; ++lane) wrong += got[lane] != expected[lane];
  std::printf("%s %s: %d of %d sums wrong\n", names[form], elect ? "elect" : "lanes", wrong, kLanes);
  return wrong == 0 ? 0 : 1;
}
