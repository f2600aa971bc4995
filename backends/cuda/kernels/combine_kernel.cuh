#pragma once
// The split-KV combine kernel: the log-sum-exp merge of the main kernel's split partials,
//   O = Σ_s 2^(lse_s - M) · O_s / Σ_s 2^(lse_s - M),  M = max_s lse_s.
// Defines the kernel: included by decode_launch.cu only, which launches it after the main
// kernel when splits > 1.
//
// A block covers 64 d (blockIdx.y) of 8 / warps_per_row rows; a row's splits are shared
// by its warps_per_row warps (split s goes to warp s % warps_per_row), a lane holds 2
// consecutive d (a float2 of each partial). Each warp requests all its splits' lse and
// partials before using any (one batch of kSplitsPerBatch: one L2 round trip up to 96
// splits per row), merges them with a running max, and the row's warps merge once through
// shared memory. One round of loads because the kernel's time is its L2 round trips: a
// block per (row, 32-d slice), with a round trip for the lse, four block barriers and a
// round trip per d slice, takes 6.2 us at B=16, S=32768 (4 splits) against 3.1 us for this
// form, ncu-timed (bench/results/device-checks/README.md). A float2 per lane, not a float4:
// a float4 form with 8 splits per batch is 1% faster at B=4 and B=16 but 2.7% slower at B=1,
// where 66 splits take two batches and only 32 blocks run
// (bench/results/ab/h200-ab-combine-warps-float4.json).

#include <cmath>
#include <cstdint>

#include <cuda_bf16.h>

#include "backends/cuda/kernels/device_primitives.cuh"

namespace tilepath::cuda {

constexpr int kCombineWarps = 8;
constexpr int kCombineThreads = 32 * kCombineWarps;
constexpr int kCombineD = 2 * 32;       // d per block: a float2 per lane
constexpr int kMaxCombineSplits = 256;  // OperatingPoint validates splits <= 256
// 12 float2 + 12 lse in flight per lane keep the kernel within 64 registers, so that its
// blocks share SMs with the main kernel's CTAs (4 x 64 threads x ~190 registers leave
// 16 K): PDL makes them resident early. A 128-register combine is 7 us slower at B=16.
constexpr int kSplitsPerBatch = 12;

// Warps per row: the fewest (1, 2, 4, 8) that take every split in one batch.
inline int combine_warps_per_row(int splits) {
  int warps = 1;
  while (warps < kCombineWarps && warps * kSplitsPerBatch < splits) warps *= 2;
  return warps;
}

#ifdef TILEPATH_KERNEL_TRACE
__device__ __forceinline__ unsigned long long trace_globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}
#endif

// Running log-sum-exp state of one lane: max m, weight sum l, weighted sum o (2 d).
struct CombineState {
  float m = -INFINITY, l = 0.0f;
  float2 o = make_float2(0.0f, 0.0f);
  // Adds terms 2^(lse_i - m)·v_i (empty splits: lse = -inf, weight 0).
  template <int kN>
  __device__ void add(const float (&lse)[kN], const float2 (&v)[kN]) {
    float m_new = m;
#pragma unroll
    for (int i = 0; i < kN; ++i) m_new = fmaxf(m_new, lse[i]);
    if (m_new == -INFINITY) return;  // nothing seen yet
    rescale(m_new);
#pragma unroll
    for (int i = 0; i < kN; ++i) {
      const float w = exp2f(lse[i] - m_new);
      l += w;
      o.x += w * v[i].x, o.y += w * v[i].y;
    }
  }
  __device__ void rescale(float m_new) {
    const float a = exp2f(m - m_new);  // m = -inf: 0
    l *= a;
    o.x *= a, o.y *= a;
    m = m_new;
  }
};

__global__ void __launch_bounds__(kCombineThreads, 4)
    combine_kernel(const float* partial_out, const float* partial_lse, int splits, int rows, int head_dim,
                   int warps_per_row, std::uint16_t* out) {
  __shared__ float warp_m[kCombineWarps], warp_l[kCombineWarps];
  __shared__ float2 warp_o[kCombineWarps][32];
#ifdef TILEPATH_KERNEL_TRACE
  const unsigned long long trace_start = trace_globaltimer();
#endif
  kernels::grid_dependency_wait();  // the partials of the main kernel
#ifdef TILEPATH_KERNEL_TRACE
  const unsigned long long trace_released = trace_globaltimer();
#endif
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int part = warp % warps_per_row;  // this warp takes splits part, part + warps_per_row, ...
  const int first = warp - part;          // the row's first warp in the block
  const int row = blockIdx.x * (kCombineWarps / warps_per_row) + warp / warps_per_row;
  const bool live_row = row < rows;
  const std::size_t split_stride = static_cast<std::size_t>(rows) * head_dim;
  const int d = blockIdx.y * kCombineD + 2 * lane;
  const bool live = live_row && d < head_dim;
  CombineState st;
#pragma unroll 1
  for (int s0 = part; s0 < splits; s0 += kSplitsPerBatch * warps_per_row) {
    float lse[kSplitsPerBatch];
    float2 v[kSplitsPerBatch];
#pragma unroll
    for (int i = 0; i < kSplitsPerBatch; ++i) {  // the batch's loads in flight before the first use
      const int s = s0 + i * warps_per_row;
      const bool present = live && s < splits;
      lse[i] = present ? partial_lse[static_cast<std::size_t>(s) * rows + row] : -INFINITY;
      v[i] = present ? *reinterpret_cast<const float2*>(partial_out + s * split_stride +
                                                        static_cast<std::size_t>(row) * head_dim + d)
                     : make_float2(0.0f, 0.0f);
    }
    st.add(lse, v);
  }
  if (warps_per_row > 1) {  // the row's warps merge through shared memory (a block-uniform branch)
    if (lane == 0) warp_m[warp] = st.m, warp_l[warp] = st.l;
    warp_o[warp][lane] = st.o;
    __syncthreads();
    if (part == 0) {
      float m_row = -INFINITY;
      for (int w = first; w < first + warps_per_row; ++w) m_row = fmaxf(m_row, warp_m[w]);
      CombineState merged;
      if (m_row != -INFINITY) {
        merged.m = m_row;
        for (int w = first; w < first + warps_per_row; ++w) {
          const float a = exp2f(warp_m[w] - m_row);  // a warp that saw only empty splits: 0
          merged.l += a * warp_l[w];
          merged.o.x += a * warp_o[w][lane].x, merged.o.y += a * warp_o[w][lane].y;
        }
      }
      st = merged;
    }
  }
  if (part == 0 && live) {  // every split empty: all weights 0, output 0
    const float inv = st.l > 0.0f ? 1.0f / st.l : 0.0f;
    const std::uint32_t packed = static_cast<std::uint32_t>(__bfloat16_as_ushort(__float2bfloat16_rn(st.o.x * inv))) |
                                 static_cast<std::uint32_t>(__bfloat16_as_ushort(__float2bfloat16_rn(st.o.y * inv)))
                                     << 16;
    *reinterpret_cast<std::uint32_t*>(out + static_cast<std::size_t>(row) * head_dim + d) = packed;
  }
#ifdef TILEPATH_KERNEL_TRACE
  if (threadIdx.x == 0)  // bench/kernel_trace.py: the combine against the main kernel's CTAs
    printf("TC %d %d g0 %llu released %llu g9 %llu\n", blockIdx.x, blockIdx.y, trace_start, trace_released,
           trace_globaltimer());
#endif
}

}  // namespace tilepath::cuda
