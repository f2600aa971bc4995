#pragma once
// gfx942 device primitives on amdgcn builtins only: the packaged ROCm device libraries
// (ockl/ocml) predate gfx942, so the kernels are compiled with -nogpulib and never call
// threadIdx/blockIdx (ockl) or libm (ocml).

// tests/hip compiles these headers as plain host C++ with the builtins emulated lane by
// lane (TILEPATH_HIP_HOST_EMULATION), to run the kernels' arithmetic without a GPU.
#ifndef TILEPATH_HIP_HOST_EMULATION
#include <hip/hip_runtime.h>
#define TP_WAVES_PER_EU(n) __attribute__((amdgpu_waves_per_eu(n)))
#endif

#include <cstdint>

namespace tilepath::hip::kernels {

using f32x2 = float __attribute__((ext_vector_type(2)));
using f32x4 = float __attribute__((ext_vector_type(4)));
using i16x4 = short __attribute__((ext_vector_type(4)));
using u32x2 = unsigned __attribute__((ext_vector_type(2)));
using u32x4 = unsigned __attribute__((ext_vector_type(4)));

inline constexpr int kWaveSize = 64;
inline constexpr float kFnuzMax = 240.0f;  // numerics::kE4M3FnuzMax

__device__ __forceinline__ int thread_index() { return static_cast<int>(__builtin_amdgcn_workitem_id_x()); }
__device__ __forceinline__ int lane_index() { return thread_index() & (kWaveSize - 1); }

__device__ __forceinline__ float as_float(unsigned u) { return __builtin_bit_cast(float, u); }
__device__ __forceinline__ unsigned as_uint(float f) { return __builtin_bit_cast(unsigned, f); }

// The value of lane (this lane ^ mask), through ds_bpermute.
__device__ __forceinline__ float shfl_xor(float v, int mask) {
  return __builtin_bit_cast(float,
                            __builtin_amdgcn_ds_bpermute((lane_index() ^ mask) << 2, __builtin_bit_cast(int, v)));
}

// Every wave of the workgroup is here and sees the others' LDS writes.
__device__ __forceinline__ void workgroup_sync() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

// LDS operations of one wave complete in order; this keeps the compiler from moving a
// lane's LDS access across it, so a wave may reuse its own LDS slot.
__device__ __forceinline__ void wave_lds_sync() {
  __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "wavefront");
  __builtin_amdgcn_wave_barrier();
}

__device__ __forceinline__ float fast_exp2(float x) { return __builtin_amdgcn_exp2f(x); }
__device__ __forceinline__ float fast_log2(float x) { return __builtin_amdgcn_logf(x); }

// BF16 of a finite float, round to nearest even (numerics::float_to_bf16).
__device__ __forceinline__ unsigned bf16_bits(float x) {
  const unsigned u = as_uint(x);
  return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}
// BF16 of a float that BF16 holds exactly (an FNUZ value): the top half.
__device__ __forceinline__ unsigned bf16_bits_exact(float x) { return as_uint(x) >> 16; }
__device__ __forceinline__ float bf16_to_float(unsigned bits) { return as_float(bits << 16); }

// Four FNUZ bytes -> four floats (v_cvt_pk_f32_fp8, exact).
__device__ __forceinline__ void fnuz4_to_float(unsigned word, float (&out)[4]) {
  const f32x2 lo = __builtin_amdgcn_cvt_pk_f32_fp8(static_cast<int>(word), false);
  const f32x2 hi = __builtin_amdgcn_cvt_pk_f32_fp8(static_cast<int>(word), true);
  out[0] = lo[0], out[1] = lo[1], out[2] = hi[0], out[3] = hi[1];
}

// Four floats -> four FNUZ bytes, round to nearest even, saturated to +-240 first
// (numerics::float_to_e4m3_fnuz; without the clamp the conversion would give NaN).
__device__ __forceinline__ unsigned float4_to_fnuz(float a, float b, float c, float d) {
  const auto sat = [](float x) { return __builtin_amdgcn_fmed3f(x, -kFnuzMax, kFnuzMax); };
  int w = __builtin_amdgcn_cvt_pk_fp8_f32(sat(a), sat(b), 0, false);
  w = __builtin_amdgcn_cvt_pk_fp8_f32(sat(c), sat(d), w, true);
  return static_cast<unsigned>(w);
}

// Four FNUZ bytes -> the four BF16 of an MFMA operand (exact: FNUZ values fit BF16).
__device__ __forceinline__ i16x4 fnuz4_to_bf16x4(unsigned word) {
  float f[4];
  fnuz4_to_float(word, f);
  i16x4 r;
  r[0] = static_cast<short>(bf16_bits_exact(f[0]));
  r[1] = static_cast<short>(bf16_bits_exact(f[1]));
  r[2] = static_cast<short>(bf16_bits_exact(f[2]));
  r[3] = static_cast<short>(bf16_bits_exact(f[3]));
  return r;
}

__device__ __forceinline__ i16x4 words_to_bf16x4(unsigned lo, unsigned hi) {
  return __builtin_bit_cast(i16x4, u32x2{lo, hi});
}
__device__ __forceinline__ long words_to_fp8x8(unsigned lo, unsigned hi) {
  return __builtin_bit_cast(long, u32x2{lo, hi});
}

// D(16x16) += A(16x32 FNUZ) · B(32x16 FNUZ). Lane l holds A[l%16][8(l/16)..+7],
// B[8(l/16)..+7][l%16] and D[4(l/16)..+3][l%16].
__device__ __forceinline__ f32x4 mfma_fp8(long a, long b, f32x4 c) {
  return __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(a, b, c, 0, 0, 0);
}
// D(16x16) += A(16x16 BF16) · B(16x16 BF16). Lane l holds A[l%16][4(l/16)..+3],
// B[4(l/16)..+3][l%16] and D[4(l/16)..+3][l%16].
__device__ __forceinline__ f32x4 mfma_bf16(i16x4 a, i16x4 b, f32x4 c) {
  return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, c, 0, 0, 0);
}

}  // namespace tilepath::hip::kernels
