#pragma once
// Compile-time description of one HIP decode variant: how K and V reach the MFMA, the
// head dim, the ablation, and the tile constants derived from them with their budgets.

#include "backends/abi/tilepath_backend.h"
#include "backends/hip/decode_launch.h"
#include "backends/hip/kernels/device_primitives.h"

namespace tilepath::hip::kernels {

// How K reaches QK.
enum class KOperand : int {
  bf16 = 0,         // K16 in HBM, BF16 MFMA against BF16 Q
  fp8_convert = 1,  // FNUZ in HBM, converted to BF16 in registers (k_prep), BF16 MFMA (k_path transform)
  fp8_mma = 2       // FNUZ in HBM, FP8 MFMA against Q quantized to FNUZ (k_path fp8_qk)
};
// How V reaches PV.
enum class VOperand : int {
  bf16 = 0,         // V16 in HBM, BF16 MFMA
  fp8_convert = 1,  // FNUZ in HBM, converted to BF16 (v_prep), BF16 MFMA (mode full)
  fp8_mma = 2       // FNUZ in HBM, FP8 MFMA against P quantized to FNUZ (mode k_only)
};

inline constexpr int kLdsPerCu = 64 * 1024;  // gfx942: 64 KiB of LDS per CU, per workgroup at most

// Template parameters are the ABI's enum values (ints), so that the host can spell the
// kernel's mangled name and find its record in the code object (variant_table.cpp).
template <int kKv, int kPath, int kMode, int kD, int kAbl, int kStage>
struct DecodeTraits {
  static constexpr bool kK8 = kKv == TP_KV_K8V16 || kKv == TP_KV_K8V8;
  static constexpr bool kV8 = kKv == TP_KV_K16V8 || kKv == TP_KV_K8V8;
  static constexpr KOperand kK =
      !kK8 ? KOperand::bf16 : (kPath == TP_KPATH_FP8_QK ? KOperand::fp8_mma : KOperand::fp8_convert);
  static constexpr VOperand kV =
      !kV8 ? VOperand::bf16 : (kMode == TP_MODE_K_ONLY ? VOperand::fp8_mma : VOperand::fp8_convert);
  static constexpr int kHeadDim = kD;
  static constexpr AblationKind kAblation = static_cast<AblationKind>(kAbl);
  static constexpr int kAblatedStage = kStage;

  static constexpr int kKBytes = kK8 ? 1 : 2;  // bytes per element in HBM
  static constexpr int kVBytes = kV8 ? 1 : 2;
  static constexpr bool kQFp8 = kK == KOperand::fp8_mma;
  static constexpr bool kPFp8 = kV == VOperand::fp8_mma;
  static constexpr bool kHasKPrep = kK == KOperand::fp8_convert;
  static constexpr bool kHasVPrep = kV8;  // convert, or the FNUZ gather of FP8 PV

  // ---- tiles ------------------------------------------------------------------
  static constexpr int kWaves = 4;  // waves per workgroup, one per SIMD of a CU
  static constexpr int kThreads = kWaves * kWaveSize;
  static constexpr int kHeads = kHeadsPerWorkgroup;       // n16 side of QK and PV
  static constexpr int kWaveTokens = 32;                  // one k32 FP8 PV step: two 16-token QK tiles
  static constexpr int kSubTiles = kWaveTokens / 16;      // QK tiles of 16 tokens
  static constexpr int kDSteps = kD / 32;                 // a lane holds 8 d of each 32-d step
  static constexpr int kMTiles = kD / 16;                 // Oᵀ(D, 16 heads) = D/16 MFMA tiles
  static constexpr int kWgTokens = kWaveTokens * kWaves;  // tokens per pipeline step of the workgroup
  static constexpr int kVRowBytes = kD * kVBytes;
  static constexpr int kVRowChunks = kVRowBytes / 16;                            // 16-byte chunks per V row
  static constexpr int kVChunksPerLane = kWaveTokens * kVRowChunks / kWaveSize;  // v_load chunks of a lane
  static constexpr int kVSlotBytes = kWaveTokens * kVRowBytes;                   // one wave's V tile in LDS

  // LDS: [V slot per wave] during the loop; the cross-wave merge reuses it afterwards:
  // m and l per (wave, head), then O (16 heads, D) accumulated wave by wave.
  static constexpr int kMergeBytes = (2 * kWaves * kHeads + kHeads * kD) * 4;
  static constexpr int kRingBytes = kWaves * kVSlotBytes;
  static constexpr int kLdsBytes = kRingBytes > kMergeBytes ? kRingBytes : kMergeBytes;

  // The occupancy each kernel is built for (amdgpu_waves_per_eu caps its registers):
  // two waves per SIMD keep two tiles' loads in flight per SIMD up to D = 128; D = 256 holds
  // twice the registers per tile and runs one.
  static constexpr int kTargetWavesPerSimd = kD <= 128 ? 2 : 1;

  static_assert(kD == 64 || kD == 128 || kD == 256, "head dim must be 64, 128 or 256");
  static_assert(kVChunksPerLane * kWaveSize == kWaveTokens * kVRowChunks, "V tile splits evenly into lanes");
  static_assert(kLdsBytes <= kLdsPerCu, "LDS over the per-workgroup limit");
  static_assert(kLdsBytes * kTargetWavesPerSimd <= kLdsPerCu, "LDS must allow the target occupancy");
  static_assert(!(kK == KOperand::fp8_mma && kMode == TP_MODE_SEPARATE_KV), "no separate_kv on HIP");

  // ---- ablation switches ------------------------------------------------------
  static constexpr bool kLoadOnly = kAblation == AblationKind::load_only;
  __host__ __device__ static constexpr bool runs(int stage) {
    return !kLoadOnly && !(kAblation == AblationKind::remove && kAblatedStage == stage);
  }
  __host__ __device__ static constexpr bool doubled(int stage) {
    return kAblation == AblationKind::twice && kAblatedStage == stage;
  }
};

}  // namespace tilepath::hip::kernels
