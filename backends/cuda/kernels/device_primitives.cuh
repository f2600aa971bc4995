#pragma once
// Thin wrappers over the PTX instructions the decode kernels are built from:
// 16-byte cp.async with zero fill, ldmatrix, the two mma.sync shapes, mbarriers,
// E4M3/F16/BF16 conversion and packing. Each wrapper is one instruction (or a fixed short sequence)
// so that the SASS can be read against the stage functions.

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace tilepath::cuda::kernels {

// ---- shared-memory addressing ----------------------------------------------

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// ---- global -> shared copies (memory pipe) ---------------------------------

// 16-byte asynchronous copy; when !valid nothing is read and the 16 bytes are zeroed
// (masked rows must be zero, not stale: 0 x NaN would poison PV).
__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const void* src, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}
// Every cp.async this thread issued, committed to a group or not, has landed.
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

// A read-only global load through L1 (ld.global.nc), volatile so that a loop-invariant
// address is read in every iteration rather than held in registers across the loop.
__device__ __forceinline__ float4 ldg_nc_f32x4(const float4* src) {
  float4 v;
  asm volatile("ld.global.nc.v4.f32 {%0,%1,%2,%3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(src));
  return v;
}

// ---- shared -> registers ----------------------------------------------------

__device__ __forceinline__ uint4 lds_128(std::uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}
__device__ __forceinline__ void sts_128(std::uint32_t addr, uint4 v) {
  asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};\n" ::"r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

// Scalar shared-memory accesses at a shared-window address.
__device__ __forceinline__ float lds_f32(std::uint32_t addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ void sts_f32(std::uint32_t addr, float v) {
  asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(addr), "f"(v) : "memory");
}
__device__ __forceinline__ void sts_u8(std::uint32_t addr, std::uint32_t v) {
  asm volatile("st.shared.u8 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void sts_u16(std::uint32_t addr, std::uint32_t v) {
  asm volatile("st.shared.u16 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}

// Four transposed 8x8 b16 matrices; lane l supplies the row address of matrix l/8, row l%8.
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t addr, std::uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}

// ---- matrix instructions ----------------------------------------------------

// D(16x8 f32) += A(16x16 bf16, row) * B(16x8 bf16, col)
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], std::uint32_t a0, std::uint32_t a1, std::uint32_t a2,
                                               std::uint32_t a3, std::uint32_t b0, std::uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// D(16x8 f32) += A(16x16 f16, row) * B(16x8 f16, col)
__device__ __forceinline__ void mma_f16_16816(float (&d)[4], std::uint32_t a0, std::uint32_t a1, std::uint32_t a2,
                                              std::uint32_t a3, std::uint32_t b0, std::uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// D(16x8 f32) += A(16x32 e4m3, row) * B(32x8 e4m3, col)   (sm_89+)
__device__ __forceinline__ void mma_e4m3_16832(float (&d)[4], std::uint32_t a0, std::uint32_t a1, std::uint32_t a2,
                                               std::uint32_t a3, std::uint32_t b0, std::uint32_t b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// ---- conversions --------------------------------------------------------------

// Two E4M3 (low byte = first element) -> F16x2 (low half = first element): one
// instruction, exact (every E4M3 value is an F16 value). The transform path converts
// FP8 operands to F16, not BF16: E4M3 -> BF16 has no single instruction (it goes
// through F16 and F32: four instructions per pair).
__device__ __forceinline__ std::uint32_t e4m3x2_to_f16x2(std::uint32_t two_bytes) {
  std::uint32_t h2;
  const unsigned short in = static_cast<unsigned short>(two_bytes & 0xFFFFu);
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(h2) : "h"(in));
  return h2;
}

// Two floats -> F16x2 (lo in the low half), RNE.
__device__ __forceinline__ std::uint32_t pack_f16x2(float lo, float hi) {
  std::uint32_t out;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(out) : "f"(hi), "f"(lo));
  return out;
}

// F16x2 -> the two floats (exact).
__device__ __forceinline__ float f16x2_low_to_float(std::uint32_t h2) {
  float f;
  asm("{\n .reg .b16 l, h;\n mov.b32 {l, h}, %1;\n cvt.f32.f16 %0, l;\n}\n" : "=f"(f) : "r"(h2));
  return f;
}
__device__ __forceinline__ float f16x2_high_to_float(std::uint32_t h2) {
  float f;
  asm("{\n .reg .b16 l, h;\n mov.b32 {l, h}, %1;\n cvt.f32.f16 %0, h;\n}\n" : "=f"(f) : "r"(h2));
  return f;
}

// Two floats -> BF16x2 (lo in the low half).
__device__ __forceinline__ std::uint32_t pack_bf16x2(float lo, float hi) {
  std::uint32_t out;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(out) : "f"(hi), "f"(lo));
  return out;
}

// Two floats -> E4M3x2 in the low 16 bits (lo in the low byte), RNE, saturating to +-448.
__device__ __forceinline__ std::uint32_t pack_e4m3x2(float lo, float hi) {
  unsigned short out;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(out) : "f"(hi), "f"(lo));
  return out;
}
__device__ __forceinline__ std::uint32_t pack_e4m3x4(float x0, float x1, float x2, float x3) {
  return pack_e4m3x2(x0, x1) | (pack_e4m3x2(x2, x3) << 16);
}

__device__ __forceinline__ std::uint32_t byte_perm(std::uint32_t lo, std::uint32_t hi, std::uint32_t selector) {
  return __byte_perm(lo, hi, selector);
}

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// ---- programmatic dependent launch ------------------------------------------

// Waits until the preceding grid in the stream has completed and its writes are visible
// (a no-op when this grid was not launched as a programmatic dependent).
__device__ __forceinline__ void grid_dependency_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }
// Lets the next grid (launched as a programmatic dependent) start its prologue.
__device__ __forceinline__ void grid_dependents_launch() {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

// ---- mbarriers (separate_kv hand-off between converter and MMA warps) -------

__device__ __forceinline__ void mbarrier_init(std::uint32_t bar, std::uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbarrier_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Blocks until the phase with the given parity has completed.
__device__ __forceinline__ void mbarrier_wait(std::uint32_t bar, std::uint32_t parity) {
  std::uint32_t done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

}  // namespace tilepath::cuda::kernels
