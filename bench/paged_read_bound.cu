// paged_read_bound: how fast can ANY kernel read a split-KV decode step's K/V bytes
// through a page table, and merge per-split results, on this GPU? A lower bound for
// the small-batch targets of issue 5 (B=1, S=32768), measured the way the CUDA plugin
// times a case: HBM-cold (the plugin's L2 flush before each launch, outside the
// events), CUDA events around the work, warm-up, median of the repeats.
//
// Nothing here computes attention. Each reader only loads every byte once (16-byte
// evict-first loads, every load of a thread in flight before the first use) and XORs
// them, so its time is what the bytes, the launch and the page-table indirection cost.
//
//   stream_project   the plugin's own read kernel over a contiguous buffer of the bytes
//                    (the "stream_same_bytes" of every case)
//   stream_oneshot   one pass, each thread issues all its kLoads loads at once
//   paged_pages      like stream_oneshot, but every 16 bytes are found through the page
//                    table (16-token pages, shuffled as in the plugin): the bytes of one
//                    page, all kv heads, are contiguous
//   paged_head_rows  the same through the page table, in the attention kernel's order:
//                    one kv head's 128-byte rows (rows of one token are 1 KB apart)
//   paged_merge      paged_pages, then a PDL-launched merge of per-split partials of
//                    the B=1 shape's size (splits x q_heads x head_dim floats and an lse
//                    each), the cheapest separate combine we could write
//
// Build and run (GPU machine; from the repository root):
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I. -o paged_read_bound \
//     bench/paged_read_bound.cu backends/cuda/read_bandwidth.cu backends/cuda/event_timer.cpp \
//     backends/cuda/l2_flush.cpp
//   ./paged_read_bound [repeats]     (prints one JSON object)

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <functional>
#include <stdexcept>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/event_timer.h"
#include "backends/cuda/l2_flush.h"
#include "backends/cuda/read_bandwidth.h"

namespace {

using tilepath::cuda::DeviceBuffer;
using tilepath::cuda::TimingStats;

// The shape of the B=1 target: one request, S=32768, 8 kv heads (32 q heads), D=128,
// FP8 K and V, 16-token pages; the plugin's split choice for it (66 splits).
constexpr int kContext = 32768, kKvHeads = 8, kQHeads = 32, kHeadDim = 128, kPageSize = 16, kSplits = 66;
constexpr int kRowChunks = kHeadDim / 16;                          // 16-byte chunks of one head's FP8 row
constexpr int kPageChunks = kPageSize * kKvHeads * kRowChunks;     // chunks of one page (all heads)
constexpr int kPages = kContext / kPageSize;
constexpr std::size_t kPoolChunks = std::size_t(kPages) * kPageChunks;  // of K, and again of V
constexpr int kThreads = 512;

__device__ __forceinline__ void xor_into(uint4& acc, const uint4& v) {
  acc.x ^= v.x;
  acc.y ^= v.y;
  acc.z ^= v.z;
  acc.w ^= v.w;
}

// Chunk c of the logical K-then-V sequence -> its address in the pools.
// kHeadRows = false: page-major (page, token, head, 16 B), the pools' own order.
// kHeadRows = true : head-major (head, token, 16 B), the attention kernel's order.
template <bool kHeadRows>
__device__ __forceinline__ const uint4* chunk_address(const uint4* k_pool, const uint4* v_pool,
                                                      const int* page_table, std::size_t c) {
  const uint4* pool = c < kPoolChunks ? k_pool : v_pool;
  if (c >= kPoolChunks) c -= kPoolChunks;
  std::size_t token, head, part;
  if constexpr (kHeadRows) {
    part = c % kRowChunks;
    token = (c / kRowChunks) % kContext;
    head = c / (std::size_t(kRowChunks) * kContext);
  } else {
    part = c % kRowChunks;
    head = (c / kRowChunks) % kKvHeads;
    token = c / (std::size_t(kRowChunks) * kKvHeads);
  }
  const std::size_t page = static_cast<std::size_t>(__ldg(page_table + token / kPageSize));
  return pool + ((page * kPageSize + token % kPageSize) * kKvHeads + head) * kRowChunks + part;
}

// One pass: thread t reads chunks t, t + T, ..., t + (kLoads-1)·T (T = threads in the
// grid), all requested before any is used. kPaged: through the page table (its entries
// are loaded first, then every chunk). The XOR is stored only in an impossible case.
// With `partials`, the grid then writes the merge's inputs (one float per thread, in a
// grid-stride loop) and lets the dependent merge launch early.
template <int kLoads, bool kPaged, bool kHeadRows>
__global__ void __launch_bounds__(kThreads) oneshot_read(const uint4* __restrict__ k_pool,
                                                         const uint4* __restrict__ v_pool,
                                                         const int* __restrict__ page_table, std::size_t chunks,
                                                         unsigned* __restrict__ sink, uint4* __restrict__ xors,
                                                         float* __restrict__ partials, std::size_t partial_count) {
  if (partials) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const std::size_t threads = std::size_t(gridDim.x) * blockDim.x;
  const std::size_t t = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint4* address[kLoads];
#pragma unroll
  for (int k = 0; k < kLoads; ++k) {
    const std::size_t c = t + k * threads;
    if constexpr (kPaged) address[k] = c < chunks ? chunk_address<kHeadRows>(k_pool, v_pool, page_table, c) : nullptr;
    else address[k] = c < chunks ? k_pool + c : nullptr;  // stream: k_pool is the whole contiguous buffer
  }
  uint4 v[kLoads];
#pragma unroll
  for (int k = 0; k < kLoads; ++k) v[k] = address[k] ? __ldcs(address[k]) : make_uint4(0, 0, 0, 0);
  uint4 acc = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int k = 0; k < kLoads; ++k) xor_into(acc, v[k]);
  if ((acc.x & acc.y & acc.z & acc.w) == 0xFFFFFFFFu) sink[0] = acc.x ^ acc.w;
  if (xors) xors[t] = acc;
  if (partials)
    for (std::size_t i = t; i < partial_count; i += threads) partials[i] = float(acc.x & 0xFFu) * 0x1p-8f;
}

// The merge of a split-KV step: out[h][d] = sum_s exp(lse_s,h - m) · o_s,h,d / sum_s exp(lse_s,h - m),
// one thread per (q head, d), every split's loads in flight before the first use.
__global__ void __launch_bounds__(kHeadDim) merge_splits(const float* __restrict__ partials,
                                                         const float* __restrict__ lse, float* __restrict__ out) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const int h = blockIdx.x, d = threadIdx.x;
  float l[kSplits], o[kSplits];
#pragma unroll
  for (int s = 0; s < kSplits; ++s) {
    l[s] = lse[s * kQHeads + h];
    o[s] = partials[(std::size_t(s) * kQHeads + h) * kHeadDim + d];
  }
  float m = -INFINITY;
#pragma unroll
  for (int s = 0; s < kSplits; ++s) m = fmaxf(m, l[s]);
  float num = 0, den = 0;
#pragma unroll
  for (int s = 0; s < kSplits; ++s) {
    const float w = __expf(l[s] - m);
    num += w * o[s];
    den += w;
  }
  out[h * kHeadDim + d] = num / den;
}

int blocks_for(std::size_t chunks, int loads) {
  return static_cast<int>((chunks + std::size_t(loads) * kThreads - 1) / (std::size_t(loads) * kThreads));
}

template <int kLoads, bool kPaged, bool kHeadRows>
void launch_read(const void* k, const void* v, const int* table, std::size_t chunks, unsigned* sink,
                 float* partials, std::size_t partial_count, cudaStream_t stream, uint4* xors = nullptr) {
  oneshot_read<kLoads, kPaged, kHeadRows><<<blocks_for(chunks, kLoads), kThreads, 0, stream>>>(
      static_cast<const uint4*>(k), static_cast<const uint4*>(v), table, chunks, sink, xors, partials, partial_count);
  TP_CUDA_CHECK(cudaGetLastError());
}

void launch_merge(const float* partials, const float* lse, float* out, cudaStream_t stream) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(kQHeads);
  config.blockDim = dim3(kHeadDim);
  config.stream = stream;
  config.attrs = &attr;
  config.numAttrs = 1;
  TP_CUDA_CHECK(cudaLaunchKernelEx(&config, merge_splits, partials, lse, out));
}

// Random words (never time on zeros); returns the XOR of all 16-byte chunks.
std::array<std::uint32_t, 4> fill_random(DeviceBuffer& buffer, std::size_t bytes, unsigned seed, cudaStream_t stream) {
  std::vector<std::uint32_t> host(bytes / 4);
  std::mt19937 rng(seed);
  std::array<std::uint32_t, 4> x{};
  for (std::size_t i = 0; i < host.size(); ++i) x[i % 4] ^= host[i] = rng();
  TP_CUDA_CHECK(cudaMemcpyAsync(buffer.get(), host.data(), bytes, cudaMemcpyHostToDevice, stream));
  TP_CUDA_CHECK(cudaStreamSynchronize(stream));
  return x;
}

// Every reader must read every chunk once: the XOR of its threads' XORs equals the data's.
template <class Launch>
void check_coverage(const char* name, const Launch& launch, const std::array<std::uint32_t, 4>& expected,
                    std::size_t threads, cudaStream_t stream) {
  DeviceBuffer xors(threads * sizeof(uint4));
  launch(xors.as<uint4>());
  std::vector<uint4> host(threads);
  TP_CUDA_CHECK(cudaMemcpyAsync(host.data(), xors.get(), threads * sizeof(uint4), cudaMemcpyDeviceToHost, stream));
  TP_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::array<std::uint32_t, 4> got{};
  for (const uint4& v : host) got[0] ^= v.x, got[1] ^= v.y, got[2] ^= v.z, got[3] ^= v.w;
  if (got != expected) throw std::runtime_error(std::string(name) + " does not read every chunk exactly once");
}

}  // namespace

int main(int argc, char** argv) try {
  const int repeats = argc > 1 ? std::max(5, std::atoi(argv[1])) : 50;
  int device = 0;
  TP_CUDA_CHECK(cudaSetDevice(device));
  cudaStream_t stream;
  TP_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int sm_count = 0;
  TP_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));

  const std::size_t pool_bytes = kPoolChunks * 16, chunks = 2 * kPoolChunks;
  DeviceBuffer contiguous(2 * pool_bytes), k_pool(pool_bytes), v_pool(pool_bytes), table(kPages * sizeof(int));
  DeviceBuffer sink(sizeof(unsigned)), partials(std::size_t(kSplits) * kQHeads * kHeadDim * sizeof(float));
  DeviceBuffer lse(std::size_t(kSplits) * kQHeads * sizeof(float)), out(kQHeads * kHeadDim * sizeof(float));
  const auto contiguous_xor = fill_random(contiguous, 2 * pool_bytes, 1, stream);
  auto pools_xor = fill_random(k_pool, pool_bytes, 2, stream);
  const auto v_xor = fill_random(v_pool, pool_bytes, 3, stream);
  for (int i = 0; i < 4; ++i) pools_xor[i] ^= v_xor[i];
  std::vector<int> pages(kPages);
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), std::mt19937(4));  // scattered pages, as the plugin's
  table.upload(pages, stream);
  std::vector<float> lse_host(std::size_t(kSplits) * kQHeads);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(0.0f, 4.0f);
  for (auto& x : lse_host) x = uniform(rng);
  lse.upload(lse_host, stream);
  const std::size_t partial_count = std::size_t(kSplits) * kQHeads * kHeadDim;

  const void* kp = k_pool.get();
  const void* vp = v_pool.get();
  const void* cp = contiguous.get();
  const int* pt = table.as<int>();
  unsigned* sk = sink.as<unsigned>();
  // The readers; launch(xors) enqueues one (xors: the coverage check's per-thread output, or null).
  struct Reader {
    std::string name;
    int loads;  // 0: the plugin's stream kernel (not checked here: the plugin's tests cover it)
    std::array<std::uint32_t, 4> data_xor;
    std::function<void(uint4*)> launch;
  };
  const std::vector<Reader> readers = {
      {"stream_project", 0, contiguous_xor,
       [&](uint4*) { TP_CUDA_CHECK(tilepath::cuda::launch_stream_read(cp, 2 * pool_bytes, sk, sm_count, stream)); }},
      {"stream_oneshot_8", 8, contiguous_xor,
       [&](uint4* x) { launch_read<8, false, false>(cp, nullptr, pt, chunks, sk, nullptr, 0, stream, x); }},
      {"stream_oneshot_16", 16, contiguous_xor,
       [&](uint4* x) { launch_read<16, false, false>(cp, nullptr, pt, chunks, sk, nullptr, 0, stream, x); }},
      {"paged_pages_8", 8, pools_xor, [&](uint4* x) { launch_read<8, true, false>(kp, vp, pt, chunks, sk, nullptr, 0, stream, x); }},
      {"paged_pages_16", 16, pools_xor, [&](uint4* x) { launch_read<16, true, false>(kp, vp, pt, chunks, sk, nullptr, 0, stream, x); }},
      {"paged_head_rows_16", 16, pools_xor,
       [&](uint4* x) { launch_read<16, true, true>(kp, vp, pt, chunks, sk, nullptr, 0, stream, x); }},
      {"paged_pages_16_merge", 16, pools_xor,
       [&](uint4* x) {
         launch_read<16, true, false>(kp, vp, pt, chunks, sk, partials.as<float>(), partial_count, stream, x);
         launch_merge(partials.as<float>(), lse.as<float>(), out.as<float>(), stream);
       }},
  };
  for (const Reader& r : readers)
    if (r.loads > 0)
      check_coverage(r.name.c_str(), r.launch, r.data_xor, std::size_t(blocks_for(chunks, r.loads)) * kThreads, stream);

  tilepath::cuda::L2Flusher flusher;
  flusher.prepare(device, stream);
  struct Row {
    std::string name;
    TimingStats t;
  };
  std::vector<Row> rows;
  for (const Reader& r : readers)
    rows.push_back({r.name, tilepath::cuda::time_launches([&] { r.launch(nullptr); }, [&] { flusher.flush(stream); },
                                                          stream, 10, repeats)});
  TP_CUDA_CHECK(cudaStreamSynchronize(stream));

  // The floor of the targets: these bytes at the plugin's read bandwidth (1 GiB stream).
  DeviceBuffer big;
  const auto bandwidth = tilepath::cuda::measure_read_bandwidth(device, stream, big, 3, 20);
  const double bytes = 2.0 * double(pool_bytes);
  const double floor_us = bytes / (bandwidth.gbps * 1e3);
  cudaDeviceProp prop{};
  TP_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::printf("{\n  \"device\": \"%s\",\n  \"shape\": {\"batch\": 1, \"context\": %d, \"q_heads\": %d, \"kv_heads\": %d, "
              "\"head_dim\": %d, \"page_size\": %d, \"kv\": \"k8v8\", \"splits\": %d},\n",
              prop.name, kContext, kQHeads, kKvHeads, kHeadDim, kPageSize, kSplits);
  std::printf("  \"bytes\": %.0f,\n  \"read_bandwidth_gbps\": %.1f,\n  \"floor_us\": %.3f,\n", bytes, bandwidth.gbps,
              floor_us);
  std::printf("  \"target_us\": %.3f,\n  \"cache\": \"hbm_cold\",\n  \"repeats\": %d,\n  \"rows\": [\n", floor_us / 0.7,
              repeats);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const TimingStats& t = rows[i].t;
    std::printf("    {\"name\": \"%s\", \"median_us\": %.3f, \"min_us\": %.3f, \"max_us\": %.3f, "
                "\"fraction_of_read_bandwidth\": %.4f}%s\n",
                rows[i].name.c_str(), t.median_us, t.min_us, t.max_us, floor_us / t.median_us,
                i + 1 < rows.size() ? "," : "");
  }
  std::printf("  ]\n}\n");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "paged_read_bound: %s\n", e.what());
  return 1;
}
