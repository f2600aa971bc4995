#pragma once
// Compile-time description of one decode-attention variant: how K and V reach the
// matrix unit, who converts them, the head dim, the ablation, and every tile
// constant derived from those (warps, ring depth, shared-memory carve-up) with the
// budgets they must respect.

#include <cstddef>

#include "backends/cuda/decode_launch.h"
#include "core/perf/cuda_kernel_plan.h"

namespace tilepath::cuda::kernels {

// How K reaches QK.
enum class KOperand : int {
  bf16 = 0,         // K16 in HBM, BF16 MMA
  fp8_convert = 1,  // E4M3 in HBM, converted to F16 on chip, F16 MMA (k_path transform)
  fp8_mma = 2       // E4M3 in HBM, FP8xFP8 MMA against quantized Q (k_path fp8_qk)
};
// How V reaches PV.
enum class VOperand : int {
  bf16 = 0,         // V16 in HBM, BF16 MMA
  fp8_convert = 1,  // E4M3 in HBM, converted to F16 on chip, F16 MMA
  fp8_mma = 2       // E4M3 in HBM, FP8xFP8 MMA against quantized P (mode k_only)
};

inline constexpr int kSmemPerBlockMax = perf::cuda_plan::kSmemPerBlockMax;

// Query heads one CTA holds: the n8 side of PV (QK pads them to m16). The launcher
// (head_chunks_of) splits a GQA group into chunks of this many heads.
inline constexpr int kHeadsPerCta = perf::cuda_plan::kHeadsPerCta;

// Warps x ring stages per CTA (core/perf/cuda_kernel_plan.h, shared with the GPU model of
// these kernels). Two MMA warps with a 3-deep
// ring each keep 2 tiles in flight per warp; small CTAs let several share an SM, so
// B x Hk CTAs run in one wave where they can (with 4 warps per CTA, B=64 takes 1.9 waves
// and each wave pays its own ramp-up, ~5 us measured). Per SM the bytes in flight stay
// ~128 KB (FP8 D=128: 4 CTAs x 2 warps x 2 tiles x 8 KB), well above the ~35 KB that
// 34.5 GB/s per SM at ~1 us loaded latency needs.
using perf::cuda_plan::choose_ring_shape;
using perf::cuda_plan::RingShape;
inline constexpr int kSmemPerBlockFor2PerSm = perf::cuda_plan::kSmemPerBlockFor2PerSm;
inline constexpr int kSmemPerBlockFor4PerSm = perf::cuda_plan::kSmemPerBlockFor4PerSm;

// kKvPerCta: kv heads one CTA covers, kWarpsPerHead MMA warps each. Warps of
// different heads read the same pages (adjacent rows of one token); 2 measured faster
// for K8/V8 at long per-CTA ranges (kv_heads_per_cta_for, docs/perf-notes.md).
template <KOperand KO, VOperand VO, bool kSeparateKv, int kD, AblationKind kAblation, int kAblatedStage,
          int kKvPerCta = 1>
struct DecodeTraits {
  static constexpr KOperand kK = KO;
  static constexpr VOperand kV = VO;
  static constexpr bool kSeparate = kSeparateKv;
  static constexpr int kHeadDim = kD;
  static constexpr AblationKind kAblationKind = kAblation;
  static constexpr int kAblationStage = kAblatedStage;

  // ---- what sits where --------------------------------------------------------
  static constexpr int kKHbmBytes = KO == KOperand::bf16 ? 2 : 1;  // bytes per K element in HBM
  static constexpr int kVHbmBytes = VO == VOperand::bf16 ? 2 : 1;
  // Format the MMA warps read: separate_kv stages converted (F16) tiles for them.
  static constexpr bool kKConsumedFp8 = KO == KOperand::fp8_mma || (KO == KOperand::fp8_convert && !kSeparate);
  static constexpr bool kVConsumedFp8 = VO == VOperand::fp8_mma || (VO == VOperand::fp8_convert && !kSeparate);
  static constexpr int kKConsumedBytes = kKConsumedFp8 ? 1 : 2;
  static constexpr int kVConsumedBytes = kVConsumedFp8 ? 1 : 2;
  static constexpr bool kQFp8 = KO == KOperand::fp8_mma;  // QK on E4M3
  static constexpr bool kPFp8 = VO == VOperand::fp8_mma;  // PV on E4M3
  // A converted E4M3 operand is F16 (one exact cvt per pair; E4M3 -> BF16 takes four
  // instructions), so its MMA is F16 and the other operand (Q, P) is F16 too.
  static constexpr bool kQkF16 = KO == KOperand::fp8_convert;
  static constexpr bool kPvF16 = VO == VOperand::fp8_convert;
  static constexpr bool kKPrepInMma = KO == KOperand::fp8_convert && !kSeparate;  // mode full / k_only
  static constexpr bool kVPrepInMma = VO == VOperand::fp8_convert && !kSeparate;  // mode full
  static constexpr bool kHasKPrep = KO == KOperand::fp8_convert;
  static constexpr bool kHasVPrep = VO != VOperand::bf16;  // convert, or the E4M3 transpose for FP8 PV
  // Lazy rescale (consume_tile): only where it measures faster, FP8 QK with FP8 PV (K8/V8
  // fp8_qk/k_only): 0.7-1% faster at B=64, S=4096 and within 1% elsewhere; the transform
  // path is 2.5-12% slower with it (bench/results/ab/h200-ab-lazy-rescale*.json).
  static constexpr bool kLazyRescale = kQFp8 && kPFp8;

  // ---- tiles ------------------------------------------------------------------
  static constexpr int kWarpTokens = 32;           // tokens per warp per pipeline tile (one k32 FP8 PV step)
  static constexpr int kNTiles = kWarpTokens / 8;  // S tile: (16 rows, 32 tokens) = 4 n8 MMA tiles
  static constexpr int kMTiles = kD / 16;          // O^T: (D, 8 heads) = D/16 m16 MMA tiles

  static constexpr int kKRowBytes = kD * kKHbmBytes;  // one token of one kv head
  static constexpr int kVRowBytes = kD * kVHbmBytes;
  static constexpr int kKChunks = kKRowBytes / 16;  // 16-byte chunks per row (cp.async unit)
  static constexpr int kVChunks = kVRowBytes / 16;
  static constexpr int kKConsumedChunks = kD * kKConsumedBytes / 16;
  static constexpr int kVConsumedChunks = kD * kVConsumedBytes / 16;

  static constexpr int kRawKTileBytes = kWarpTokens * kKRowBytes;  // (32 tok, D) per warp
  static constexpr int kRawVTileBytes = kWarpTokens * kVRowBytes;
  static constexpr int kRawStageBytes = kRawKTileBytes + kRawVTileBytes;
  static constexpr int kStagedKTileBytes = kWarpTokens * kD * kKConsumedBytes;  // separate_kv only
  static constexpr int kStagedVTileBytes = kWarpTokens * kD * kVConsumedBytes;
  static constexpr int kStagedSlots = 2;  // converter fills one while the MMA warp reads the other
  static constexpr int kStagedBytesPerWarp = kSeparate ? kStagedSlots * (kStagedKTileBytes + kStagedVTileBytes) : 0;

  static constexpr RingShape kShape = choose_ring_shape(kRawStageBytes, kStagedBytesPerWarp, kSeparate);
  static constexpr int kKvHeadsPerCta = kKvPerCta;
  static constexpr int kWarpsPerHead = kShape.mma_warps;            // MMA warps sharing one kv head's tiles
  static constexpr int kMmaWarps = kWarpsPerHead * kKvHeadsPerCta;  // MMA warps of the CTA
  static constexpr int kStages = kShape.stages;
  static constexpr int kConverterWarps = kSeparate ? kMmaWarps : 0;  // one per MMA warp (a pair)
  static constexpr int kThreads = 32 * (kMmaWarps + kConverterWarps);
  static constexpr int kCtaTokens = kWarpTokens * kWarpsPerHead;  // tokens per pipeline step of one kv head

  // shared memory: [raw ring | staged slots | mbarriers]; the merge buffer reuses the ring
  static constexpr int kRawRingBytes = kMmaWarps * kStages * kRawStageBytes;
  static constexpr int kStagedOffset = kRawRingBytes;
  static constexpr int kBarrierOffset = kStagedOffset + kMmaWarps * kStagedBytesPerWarp;
  static constexpr int kBarrierBytes = kSeparate ? kMmaWarps * kStagedSlots * 2 * 8 : 0;  // full + empty
  static constexpr int kSmemBytes = kBarrierOffset + kBarrierBytes;
  // A plain K cache: no k_bias stage (PrebiasTraits below adds it).
  static constexpr bool kPrebias = false;
  static constexpr int kBiasTableOffset = kSmemBytes, kBiasTableBytes = 0;
  static constexpr int kMergeBytes = kMmaWarps * (kHeadsPerCta * kD + 2 * kHeadsPerCta) * 4;

  static_assert(kD == 64 || kD == 128 || kD == 256, "head dim must be 64, 128 or 256");
  static_assert(kMmaWarps > 0, "no ring shape fits the shared-memory budget");
  static_assert(kStages >= 2, "the ring keeps kStages-1 tiles in flight while one is consumed");
  static_assert(kKvPerCta == 1 || !kSeparate, "separate_kv pairs converter and MMA warps of one kv head");
  static_assert(kSmemBytes <= kSmemPerBlockMax, "shared memory over the per-block limit");
  static_assert(kMergeBytes <= kRawRingBytes, "the cross-warp merge buffer must fit in the ring it reuses");
  static_assert(kKConsumedChunks % 4 == 0, "a K row must split into groups of 4 chunks (one per lane of a quad)");
  static_assert(kKConsumedChunks >= 4 && kVConsumedChunks >= 4, "swizzle assumes >= 4 chunks per row");
  static_assert(kBarrierOffset % 8 == 0, "mbarriers need 8-byte alignment");
  static_assert(!(kSeparate && VO == VOperand::fp8_mma), "separate_kv stages F16 V; FP8 PV is mode k_only");

  // ---- ablation switches ------------------------------------------------------
  static constexpr bool kLoadOnly = kAblation == AblationKind::load_only;
  // Isolated stage kernels (docs/stage-model.md, "Isolated stage costs"): the same CTAs,
  // threads and shared memory as the real kernel, so the same CTAs per SM, with only one
  // stage running. A compute stage walks the case's tiles over the ring slots resident in
  // shared memory (zeroed once, never loaded); k_load / v_load are the only loads.
  static constexpr bool kIsolated = kAblation == AblationKind::isolate;
  static constexpr bool kIsolatedLoad =
      kIsolated && (kAblatedStage == TP_STAGE_K_LOAD || kAblatedStage == TP_STAGE_V_LOAD);
  static constexpr bool kIsolatedCompute = kIsolated && !kIsolatedLoad;
  static constexpr bool kLoadsK = !kIsolated || kAblatedStage == TP_STAGE_K_LOAD;
  static constexpr bool kLoadsV = !kIsolated || kAblatedStage == TP_STAGE_V_LOAD;
  // No per-tile compute stage runs while the ring streams (load_only, an isolated load).
  static constexpr bool kNoCompute = kLoadOnly || kIsolatedLoad;
  // k_only's E4M3 transpose of V is part of pv in the stage graph (it has no v_prep there),
  // so pv alone includes it.
  static constexpr bool kVPrepInPvStage = VO == VOperand::fp8_mma;
  __host__ __device__ static constexpr bool runs(int stage) {
    if (kIsolated)
      return stage == kAblatedStage || (kVPrepInPvStage && kAblatedStage == TP_STAGE_PV && stage == TP_STAGE_V_PREP);
    return !kLoadOnly && !(kAblation == AblationKind::remove && kAblatedStage == stage);
  }
  __host__ __device__ static constexpr bool doubled(int stage) {
    return kAblation == AblationKind::twice && kAblatedStage == stage;
  }
};

// The same variant over a post-RoPE prebias K cache (K_t - RoPE_t(b) stored): the k_bias
// stage adds the exact bias's scores (decode_stages.cuh), reading a (32 token, D) F16
// cos/sin table (bias_rotation_tables.h) that the CTA keeps in shared memory after the
// ring. A type of its own, so the plain variants' kernels stay exactly what they were.
template <class Plain>
struct PrebiasTraits : Plain {
  static constexpr bool kPrebias = true;
  static constexpr int kBiasTableOffset = Plain::kSmemBytes;
  static constexpr int kBiasTableBytes = 32 * Plain::kHeadDim * 2;
  static constexpr int kSmemBytes = kBiasTableOffset + kBiasTableBytes;

  static_assert(Plain::kK != KOperand::bf16 && !Plain::kSeparate && Plain::kHeadDim % 128 == 0,
                "k_bias: an FP8 K read by the MMA warps, D a multiple of 128 (a lane holds both channels of a pair)");
  static_assert(kBiasTableOffset % 16 == 0, "the k_bias table is read as 16-byte words");
  // The table must not cost the plain variant's CTAs per SM (4 with one kv head, 2 with two).
  static_assert(kSmemBytes <= (Plain::kKvHeadsPerCta == 1 ? kSmemPerBlockFor4PerSm : kSmemPerBlockFor2PerSm),
                "the k_bias table lowers the CTAs per SM");
};

// 16-byte chunk swizzle inside one token row, so that (a) the quad-wide 16-byte
// row reads of QK and (b) ldmatrix's eight row addresses hit distinct bank groups.
// Rows of >= 8 chunks: rows 2m and 2m+1 land in opposite halves of a 128-byte line
// and rows 0..7 take 8 distinct chunk offsets. Rows of 4 chunks (64 bytes) already
// alternate halves; the xor separates rows 0..7 within them.
template <int kChunksPerRow>
__host__ __device__ constexpr int swizzle_chunk(int row, int chunk) {
  if constexpr (kChunksPerRow >= 8) {
    return chunk ^ (((row & 1) << 2) | ((row >> 1) & 3));
  } else {
    return chunk ^ ((row >> 1) & 3);
  }
}

}  // namespace tilepath::cuda::kernels
