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

// A K-major operand tile of kRows rows of kRowBytes bytes in the swizzle layout TMA writes
// (SWIZZLE_128B, or SWIZZLE_64B for 64-byte rows) and wgmma reads. Rows wider than 128 bytes
// are cut into column blocks of 128 bytes, one after the other (kRows rows each). Inside a
// block, rows of kSwizzleBytes follow each other and 8 rows make an atom; the 16-byte chunk c
// of row r sits at chunk c ^ (r % 8) (128-byte swizzle) or c ^ ((r / 2) % 4) (64-byte).
// Every block starts at a multiple of its atom, so the pattern is the address-based one.
template <int kRowBytesT, int kRows>
struct SwizzledTile {
  static constexpr int kRowBytes = kRowBytesT;
  static constexpr int kSwizzleBytes = kRowBytes >= 128 ? 128 : kRowBytes;
  static constexpr int kBlocks = kRowBytes / kSwizzleBytes;
  static constexpr int kBlockBytes = kRows * kSwizzleBytes;
  static constexpr int kBytes = kBlocks * kBlockBytes;
  static_assert(kSwizzleBytes == 64 || kSwizzleBytes == 128, "rows of 64 bytes or multiples of 128");
  static_assert(kRows % 8 == 0, "whole swizzle atoms");

  // Byte offset of (row, byte) in the tile, for operands the threads read or write themselves.
  __device__ static std::uint32_t offset(int row, int byte) {
    const int block = byte / kSwizzleBytes, b = byte % kSwizzleBytes;
    const int phase = kSwizzleBytes == 128 ? (row & 7) : ((row >> 1) & 3);
    return static_cast<std::uint32_t>(block * kBlockBytes + row * kSwizzleBytes + (((b >> 4) ^ phase) << 4) + (b & 15));
  }

  // The wgmma descriptor of the K step that starts at byte k_byte of every row. One wgmma
  // reads 32 bytes of K per row, inside one swizzle row: the step is the start address plus
  // its byte, the leading-dimension offset is unused (encoded as 1), the stride is one atom.
  __device__ static std::uint64_t desc(std::uint32_t tile, int k_byte) {
    const std::uint32_t start = tile + (k_byte / kSwizzleBytes) * kBlockBytes + k_byte % kSwizzleBytes;
    constexpr std::uint64_t kLeadingOffset = 1;
    constexpr std::uint64_t kStrideOffset = (8 * kSwizzleBytes) >> 4;
    constexpr std::uint64_t kMode = kSwizzleBytes == 128 ? 1 : 2;  // 128-byte or 64-byte swizzle
    return static_cast<std::uint64_t>((start & 0x3FFFFu) >> 4) | (kLeadingOffset << 16) | (kStrideOffset << 32) |
           (kMode << 62);
  }
};

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

// D(64x8 f32) (+)= A(64x16 bf16, smem, K-major) · B(16x8 bf16, smem, K-major)   [HGMMA]
__device__ __forceinline__ void wgmma_m64n8k16_bf16_ss(float (&d)[4], std::uint64_t desc_a, std::uint64_t desc_b,
                                                       bool accumulate) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %6, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0,%1,%2,%3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "l"(desc_a), "l"(desc_b), "r"(static_cast<int>(accumulate)));
}

// D(64x8 f32) += A(64x16 bf16, registers) · B(16x8 bf16, smem, K-major)   [HGMMA]
__device__ __forceinline__ void wgmma_m64n8k16_bf16_rs(float (&d)[4], std::uint32_t a0, std::uint32_t a1,
                                                       std::uint32_t a2, std::uint32_t a3, std::uint64_t desc_b) {
  asm volatile(
      "{\n .reg .pred p;\n setp.eq.b32 p, 1, 1;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, p, 1, 1, 0;\n}\n"
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

// Arrives on bar once every cp.async this thread has issued so far has landed; .noinc: the
// arrival is one of the barrier's count (the cp.async ring counts its producer lanes).
__device__ __forceinline__ void cp_async_mbarrier_arrive_noinc(std::uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

// ---- named barrier of one warpgroup ---------------------------------------------

// The consumer warpgroup's barrier (id 1; id 0 is __syncthreads), the producer warp not in it.
__device__ __forceinline__ void warpgroup_barrier() { asm volatile("bar.sync 1, 128;\n" ::: "memory"); }
// Barrier `id` of one of several consumer warpgroups (the two-kv-head kernels: 1 + head).
__device__ __forceinline__ void warpgroup_barrier(int id) { asm volatile("bar.sync %0, 128;\n" ::"r"(id) : "memory"); }

}  // namespace tilepath::cuda::kernels
