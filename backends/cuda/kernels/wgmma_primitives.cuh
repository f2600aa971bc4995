#pragma once
// Thin wrappers over the Hopper-only (sm_90a) instructions of the wgmma decode kernels:
// warpgroup MMA (wgmma.mma_async: HGMMA / QGMMA in SASS), its shared-memory matrix
// descriptors, the bulk tensor copy (TMA, cp.async.bulk.tensor) completing on an mbarrier,
// the async-proxy fence and a named barrier for one warpgroup. One instruction each, so the
// SASS reads against the stage functions of decode_wgmma.cuh.

#include <cstdint>

#include <cuda.h>

#include "backends/cuda/kernels/device_primitives.cuh"

namespace tilepath::cuda::kernels {

// ---- shared-memory matrix descriptors -----------------------------------------

// A K-major operand in the 128-byte swizzle layout (what TMA's SWIZZLE_128B writes): rows of
// 128 bytes, 8 rows to a 1024-byte atom, the 16-byte chunk c of row r stored at chunk
// c ^ (r % 8). Atoms follow each other along M/N (stride 1024); one wgmma reads 32 bytes of
// K from each row, so the K steps of a row are the start address plus 32·step and the
// leading-dimension offset is unused (encoded as 1, as the layout asks).
__device__ __forceinline__ std::uint64_t sw128_k_major_desc(std::uint32_t smem_address) {
  constexpr std::uint64_t kLeadingOffset = 1;         // 16 bytes, unused with this swizzle
  constexpr std::uint64_t kStrideOffset = 1024 >> 4;  // next 8-row atom
  constexpr std::uint64_t kSwizzle128B = 1;
  return static_cast<std::uint64_t>((smem_address & 0x3FFFFu) >> 4) | (kLeadingOffset << 16) | (kStrideOffset << 32) |
         (kSwizzle128B << 62);
}

// Byte offset of (row, byte) in that layout, for operands the threads write themselves.
__device__ __forceinline__ std::uint32_t sw128_offset(int row, int byte) {
  return static_cast<std::uint32_t>(row * 128 + ((((byte >> 4) ^ row) & 7) << 4) + (byte & 15));
}

// ---- warpgroup MMA --------------------------------------------------------------

// Orders this thread's register writes (accumulators, A fragments) before the next wgmma.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Pins an accumulator register after wgmma_wait: the compiler must not read it earlier.
__device__ __forceinline__ void wgmma_operand_fence(float& r) { asm volatile("" : "+f"(r)::"memory"); }

// D(64x8 f32) (+)= A(64x32 e4m3, smem, K-major) · B(32x8 e4m3, smem, K-major)   [QGMMA]
__device__ __forceinline__ void wgmma_m64n8k32_e4m3_ss(float (&d)[4], std::uint64_t desc_a, std::uint64_t desc_b,
                                                       bool accumulate) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %6, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0,%1,%2,%3}, %4, %5, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "l"(desc_a), "l"(desc_b), "r"(static_cast<int>(accumulate)));
}

// D(64x8 f32) += A(64x32 e4m3, registers) · B(32x8 e4m3, smem, K-major)   [QGMMA]
// A per warp w: rows 16w..16w+15 in mma.sync's m16n8k32 A layout.
__device__ __forceinline__ void wgmma_m64n8k32_e4m3_rs(float (&d)[4], const std::uint32_t (&a)[4],
                                                       std::uint64_t desc_b) {
  asm volatile(
      "{\n .reg .pred p;\n setp.eq.b32 p, 1, 1;\n"
      "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b));
}

// D(64x8 f32) += A(64x16 f16, registers) · B(16x8 f16, smem, K-major)   [HGMMA]
__device__ __forceinline__ void wgmma_m64n8k16_f16_rs(float (&d)[4], std::uint32_t a0, std::uint32_t a1,
                                                      std::uint32_t a2, std::uint32_t a3, std::uint64_t desc_b) {
  asm volatile(
      "{\n .reg .pred p;\n setp.eq.b32 p, 1, 1;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc_b));
}

// ---- bulk tensor copies (TMA) and their mbarriers ---------------------------------

// Makes the mbarrier inits visible to the async proxy (the copy engine) before any copy.
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// Shared memory written by ordinary stores that wgmma (the async proxy) reads next.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Arrives on bar and tells it that `bytes` more will land through complete_tx.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(std::uint32_t bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

// One box of a 4-D tensor map (coordinates innermost first) into shared memory at dst;
// its bytes complete_tx on bar.
__device__ __forceinline__ void tma_load_4d(std::uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2, int c3,
                                            std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];\n" ::"r"(dst),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
      : "memory");
}

// ---- named barrier of one warpgroup ---------------------------------------------

// The consumer warpgroup's barrier (id 1; id 0 is __syncthreads), the producer warp not in it.
__device__ __forceinline__ void warpgroup_barrier() { asm volatile("bar.sync 1, 128;\n" ::: "memory"); }

}  // namespace tilepath::cuda::kernels
