#pragma once
// The wgmma decode kernels (mma = wgmma, sm_90a), K and V brought by the bulk tensor copy
// engine (TMA) into a swizzled shared-memory ring as they sit in HBM (E4M3 or BF16):
//   fp8_qk     QK on Hopper's FP8 tensor-core path (wgmma e4m3 x e4m3 -> f32: QGMMA), K read
//              by the tensor cores straight from the ring, Q quantized once per step
//   transform  QK on HGMMA (F16): K converted to F16 in registers (k_prep) as wgmma's A
//              operand, against F16 Q (scaled per head as the mma.sync kernel's q_to_f16)
//   k16        QK on HGMMA (BF16): BF16 K straight from the ring against BF16 Q as given
//
// One CTA per (request, kv head, split, group of <= 8 query heads), as the mma.sync kernel:
//   producer warp (warp 4)       k_load, v_load: per 64-token tile, one TMA box per page
//                                 piece of K and of V (4-D tensor maps over the page pool),
//                                 completing on the slot's `full` mbarrier; for pages the
//                                 boxes do not tile (WgmmaCpAsyncRingTraits), 16-byte cp.async
//                                 chunks gathered token by token into the same swizzled tiles,
//                                 by two producer warps (warps 4 and 5: K and V) in one-head CTAs
//   consumer warpgroup (0..3)    q_quant once per step into the Q operand tile; per tile
//                                 qk -> softmax -> v_prep -> pv -> accum, then releases the
//                                 slot on its `empty` mbarrier
// Tiles are 64 tokens: the M side of QK's wgmma (tokens) with the query heads as N = 8:
//   QK  S(64 tok, 8 heads)  = K(64 tok, D) · Qᵀ(D, 8)        A, B from shared memory
//   PV  Oᵀ(D, 8 heads)     += Vᵀ(D, 64 tok) · Pᵀ(64 tok, 8)   A (Vᵀ) from registers, B (Pᵀ) in smem
// FP8 wgmma reads only K-major operands from shared memory, so Vᵀ (M = d) is built in
// registers from V's rows (ldmatrix.trans + byte permutes, the mma.sync kernel's v_prep),
// and P goes through a small shared tile in the token order those fragments use.
// mode k_only: P quantized to E4M3 (x256) and V E4M3, PV on QGMMA; mode full: V converted to
// F16 in v_prep and P F16, PV on HGMMA; BF16 V (V16): ldmatrix.trans of V's rows is Vᵀ's BF16
// fragment as it is, P BF16, PV on HGMMA.
//
// Softmax: every warp holds 16 tokens of the tile for 2 heads per lane, so a tile's row max
// is exchanged through shared memory once per tile (one warpgroup barrier), and the whole
// warpgroup keeps one running max per head; O needs no merge across warps at the end.

#include <cstdint>

#include "backends/cuda/kernels/decode_kernel.cuh"
#include "backends/cuda/kernels/wgmma_primitives.cuh"

namespace tilepath::cuda::kernels {

// The layout of a wgmma kernel's CTA for kKvPerCta kv heads (1, or 2: one consumer warpgroup
// per kv head, both reading the same pages). The kernels are instantiated with the named types
// below (WgmmaTraits, WgmmaLoadOnlyTraits, WgmmaTwoHeadTraits, ...), not with this one.
template <KOperand KO, VOperand VO, int kD, int kKvPerCta>
struct WgmmaLayout {
  static constexpr bool kLoadOnly = false;  // WgmmaLoadOnlyTraits
  static constexpr bool kIsolated = false;  // WgmmaIsolatedTraits
  static constexpr int kIsolatedStage = -1;
  static constexpr bool kComputeOnly = false;  // WgmmaComputeOnlyTraits
  static constexpr bool kCpAsyncRing = false;  // WgmmaCpAsyncRingTraits
  static constexpr int kProducerWarps = 1;     // the TMA ring's one warp issues every box
  static constexpr int kMinCtasPerSm = 0;      // registers as ptxas chooses (0: no bound)
  static constexpr KOperand kK = KO;
  static constexpr VOperand kV = VO;
  static constexpr bool kQFp8 = KO == KOperand::fp8_mma;  // fp8_qk: QK on E4M3; transform: F16; k16: BF16
  static constexpr int kHeadDim = kD;
  static constexpr int kKvHeadsPerCta = kKvPerCta;
  static constexpr bool kPFp8 = VO == VOperand::fp8_mma;        // k_only: PV on E4M3
  static constexpr bool kPBf16 = VO == VOperand::bf16;          // V16: PV on BF16; else F16
  static constexpr int kKBytes = KO == KOperand::bf16 ? 2 : 1;  // per element, in HBM and in the ring
  static constexpr int kVBytes = VO == VOperand::bf16 ? 2 : 1;

  static constexpr int kTileTokens = perf::cuda_plan::kWgmmaTileTokens;  // M of the QK wgmma
  // Kv heads whose rows one ring row holds: two E4M3 heads of 64-byte rows (D = 64) share one
  // 128-byte row, brought by one TMA box over both heads (the heads sit next to each other in
  // every token of the pool), each consumer warpgroup reading its head's half. fp8_qk k_only
  // at B = 64, S = 4096: 1.15x the byte floor, against 1.28x for one head per CTA and for a
  // box per head's 64-byte rows alike (bench/results/wgmma-d64-wide-rows/).
  static constexpr int kHeadsPerRow = kKvPerCta == 2 && kD * kKBytes == 64 && kD * kVBytes == 64 ? 2 : 1;
  // Ring depth: kStages - 1 tiles in flight while one is consumed. 4 slots only where they
  // keep a CTA under 56 KB of shared memory, so 4 CTAs share an SM: at 16 KB a slot (K8/V8
  // D = 128, K16/V16 D = 64) 4 slots let only 3 fit, and were slower (docs/perf-notes.md,
  // "wgmma kernels"); 3 from there up (2 CTAs per SM at 32 KB, 1 at 64 KB).
  static constexpr int kStages =
      perf::cuda_plan::wgmma_stages(kKvPerCta * perf::cuda_plan::wgmma_stage_bytes(kD, kKBytes, kVBytes));
  static constexpr int kConsumerWarps = perf::cuda_plan::kWgmmaConsumerWarps;  // per warpgroup
  static constexpr int kWarpgroups = kKvPerCta;                                // a consumer warpgroup per kv head
  static constexpr int kThreads = perf::cuda_plan::wgmma_threads(kWarpgroups);
  static constexpr int kMBlocks = kHeadDim / 64;  // PV's m64 blocks along d

  // The operand tiles (SwizzledTile): K and V (64 tok, D) E4M3 or BF16 as TMA writes them, Qᵀ
  // (8 heads, D) E4M3, F16 or BF16, Pᵀ (8 heads, 64 tok) E4M3 (the first 64 bytes of a row),
  // F16 or BF16.
  using KTile = SwizzledTile<kHeadsPerRow * kD * kKBytes, kTileTokens>;
  using VTile = SwizzledTile<kHeadsPerRow * kD * kVBytes, kTileTokens>;
  using QTile = SwizzledTile<kQFp8 ? kD : 2 * kD, 8>;
  using PTile = SwizzledTile<128, 8>;

  // shared memory, every operand tile 1024-byte aligned (the largest swizzle atom):
  // [ring: kStages x (K tile | V tile) per row of kv heads (one, or the CTA's two)]
  // [per consumer warpgroup: Q tile, P tile, row maxima, q scales, l sums (1024-aligned blocks)]
  // [mbarriers]
  static constexpr int kKTileBytes = KTile::kBytes;
  static constexpr int kVTileBytes = VTile::kBytes;
  static constexpr int kRowKvBytes = kKTileBytes + kVTileBytes;  // one row of kv heads' tiles of a slot
  static constexpr int kStageBytes = kKvPerCta / kHeadsPerRow * kRowKvBytes;
  static constexpr int kQOffset = kStages * kStageBytes;
  static constexpr int kPOffset = kQOffset + (QTile::kBytes + 1023) / 1024 * 1024;
  static constexpr int kRowMaxOffset = kPOffset + PTile::kBytes;
  static constexpr int kQScaleOffset = kRowMaxOffset + kConsumerWarps * 8 * 4;
  static constexpr int kLSumOffset = kQScaleOffset + 8 * 4;
  static constexpr int kBlockEnd = kLSumOffset + kConsumerWarps * 8 * 4;  // of warpgroup 0's block
  static constexpr int kBlockBytes = (kBlockEnd - kQOffset + 1023) / 1024 * 1024;
  static constexpr int kBarrierOffset = kBlockEnd + (kWarpgroups - 1) * kBlockBytes;
  static constexpr int kUsedBytes = kBarrierOffset + 2 * kStages * 8;
  static constexpr int kSmemBytes = kUsedBytes + 1024;  // room to align the dynamic base to 1024

  static_assert(kKvPerCta == 1 || kKvPerCta == 2, "one or two kv heads per CTA");
  static_assert(kStageBytes % 1024 == 0, "ring slots keep the 1024-byte swizzle alignment");
  static_assert(kD == 64 || kD == 128 || kD == 256, "head dim must be 64, 128 or 256");
  // The GPU model's launch plan (core/perf/cuda_kernel_plan.h) sizes this kernel the same way.
  static_assert(kSmemBytes == perf::cuda_plan::wgmma_smem_bytes(kD, kKBytes, kVBytes, kQFp8, kKvPerCta),
                "the plan's shared memory of this kernel");
};

// The wgmma kernel of (KO, VO, kD): one kv head per CTA.
template <KOperand KO, VOperand VO, int kD>
struct WgmmaTraits : WgmmaLayout<KO, VO, kD, 1> {};

// Two kv heads per CTA: a consumer warpgroup per head, each ring slot holding both heads'
// K and V tiles of the same pages, one producer warp. Their rows are adjacent in every token:
// at D = 64 (E4M3) one 128-byte tile row holds both (kHeadsPerRow), else each head has its tiles.
template <KOperand KO, VOperand VO, int kD>
struct WgmmaTwoHeadTraits : WgmmaLayout<KO, VO, kD, 2> {};

// The load_only ablation of WgmmaTraits<KO, VO, kD>: the same CTA, ring, prologue and epilogue
// with no per-tile compute (each tile's slot released as soon as it lands): the stream through
// the kernel's own TMA geometry and occupancy. A type of its own, so that the full kernels
// keep their names and code.
template <KOperand KO, VOperand VO, int kD>
struct WgmmaLoadOnlyTraits : WgmmaTraits<KO, VO, kD> {
  static constexpr bool kLoadOnly = true;
};

// The load_only ablation of WgmmaTwoHeadTraits<KO, VO, kD>.
template <KOperand KO, VOperand VO, int kD>
struct WgmmaTwoHeadLoadOnlyTraits : WgmmaTwoHeadTraits<KO, VO, kD> {
  static constexpr bool kLoadOnly = true;
};

// The kernel of traits Base (a full kernel or its load_only) with the ring filled by the
// producer warp's 16-byte cp.async gathers instead of TMA boxes, for the pages the boxes do not
// tile: a box fills whole 1024-byte swizzle atoms (8 rows, so 8 tokens of one page), while
// cp.async puts each 16-byte chunk of a token's row at its swizzled place, so every page size
// works (1-token pages among them) and the consumer reads the same tiles. A 1-D bulk copy
// (cp.async.bulk) of a token's row would land unswizzled, which the wgmma descriptors cannot
// read. A type of its own, so that the TMA kernels keep their names and code.
template <class Base>
struct WgmmaCpAsyncRingTraits : Base {
  static constexpr bool kCpAsyncRing = true;
  static constexpr int kProducerWarps = perf::cuda_plan::wgmma_producer_warps(true, Base::kKvHeadsPerCta);
  static constexpr int kThreads = perf::cuda_plan::wgmma_threads(Base::kWarpgroups, kProducerWarps);
  // A second producer warp is held to the registers that keep the CTAs per SM that shared
  // memory allows, so that it costs no CTA (ptxas's own choice cost one: 4 -> 3 at D = 128).
  static constexpr int kMinCtasPerSm = kProducerWarps > 1 ? perf::cuda_plan::ctas_per_sm_for(Base::kSmemBytes, kThreads)
                                                          : Base::kMinCtasPerSm;
};

// The isolated stage kernel of one per-tile compute stage (k_prep, qk, softmax, v_prep, pv or
// accum) of WgmmaTraits<KO, VO, kD> (docs/stage-model.md, "Isolated stage costs"): the same CTA
// and shared memory, so the same CTAs per SM, the consumer warpgroup running only that stage
// over ring slots zeroed once and never loaded; the producer warp loads nothing.
template <KOperand KO, VOperand VO, int kD, int kStage>
struct WgmmaIsolatedTraits : WgmmaTraits<KO, VO, kD> {
  static constexpr bool kIsolated = true;
  static constexpr int kIsolatedStage = kStage;
  static_assert(kStage == TP_STAGE_K_PREP || kStage == TP_STAGE_QK || kStage == TP_STAGE_SOFTMAX ||
                    kStage == TP_STAGE_V_PREP || kStage == TP_STAGE_PV || kStage == TP_STAGE_ACCUM,
                "a per-tile compute stage of the consumer warpgroup");
  static_assert(kStage != TP_STAGE_K_PREP || KO == KOperand::fp8_convert, "k_prep: the transform path only");
  static_assert(kStage != TP_STAGE_V_PREP || VO == VOperand::fp8_convert,
                "v_prep: E4M3 V converted to F16 (k_only's transpose is part of pv; BF16 V has none)");
};

// The compute_only ablation of WgmmaTraits<KO, VO, kD>: the consumer warpgroup's whole per-tile
// work (qk -> softmax -> v_prep -> pv -> accum, with its barriers) over ring slots zeroed once
// and never loaded, without waiting for a slot to land or releasing it; the producer warp loads
// nothing. Its slope is the compute side's own tile interval, as load_only's is the ring's.
template <KOperand KO, VOperand VO, int kD>
struct WgmmaComputeOnlyTraits : WgmmaTraits<KO, VO, kD> {
  static constexpr bool kComputeOnly = true;
};

// Whether the producer warp fills the ring (not in the isolated stages and compute_only, whose
// consumers walk slots zeroed once).
template <class T>
constexpr bool wgmma_loads_ring() {
  return !T::kIsolated && !T::kComputeOnly;
}

// Kernel parameters: the mma.sync kernel's, and the tensor maps of the K and V page pools
// (dims innermost first: the bytes of kHeadsPerRow heads' rows, row of kv heads, slot in page,
// page; boxes of (one column block of a row, 1, box tokens, 1)).
#ifdef TILEPATH_KERNEL_TRACE
// The steps of a CTA's start before its first request, as the producer's first lane sees them
// (cycles since the start): 0 a kernel parameter read (the page table's address), 1 its first
// page-table entry arrived, 2 the request's length arrived, 3 past the barriers' set-up
// (__syncthreads), 4 the producer's first instruction, 5 its first bulk tensor copy about to be
// issued (the copy's expected bytes set). Each stamp is taken in a branch on the value it waits
// for, so that the clock is read after the value has arrived.
constexpr int kTpStartSlots = 6;
__shared__ long long tp_start[kTpStartSlots];
#define TP_START_WHEN(i, ready)                        \
  do {                                                 \
    if ((ready) && lane == 0) tp_start[i] = clock64(); \
  } while (0)
// A CTA's trace (diagnostic builds): the phase stamps and the ring's sums, written by thread 0
// at the CTA's end and printed by the host after the launch (launch_wgmma) in the lines
// bench/kernel_trace.py reads. Not printed from the kernel: a printf there makes ptxas
// serialise every wgmma of the kernel (C7510), which would slow the work being traced.
struct WgmmaTraceRecord {
  unsigned long long g0, g9;       // %globaltimer at the CTA's start and end
  long long stamps[8];             // tp_trace's slots, cycles since the start
  long long start[kTpStartSlots];  // tp_start's slots, cycles since the start
  long long end;                   // cycles from the start to the record
  long long ring[kTpRingSlots];    // tp_ring
  int x, y, z, sm, tiles, load_only;
};
#endif

struct WgmmaParams {
  KernelParams base;
  CUtensorMap k_map, v_map;
#ifdef TILEPATH_KERNEL_TRACE
  WgmmaTraceRecord* trace;  // one record per CTA, in linear block order
#endif
};

// Tokens of one TMA box: wgmma_box_tokens (decode_launch.h); tiles start at multiples of 32,
// as split starts do, so a box never straddles two pages.

// The CTA's shared memory as one consumer warpgroup sees it: its kv head's tiles and its own
// block of operand tiles and bookkeeping (the producer names the head of each tile it loads).
template <class T>
struct WgmmaSmem {
  std::uint32_t base;
  int warpgroup = 0;  // the consumer warpgroup within the CTA, and so its kv head (< kWarpgroups)
  __device__ std::uint32_t block() const {
    if constexpr (T::kWarpgroups == 1) {
      return 0u;
    } else {
      return static_cast<std::uint32_t>(warpgroup * T::kBlockBytes);
    }
  }
  // The tiles of row r of the CTA's kv heads (heads r·kHeadsPerRow ..) in ring slot `slot`.
  __device__ std::uint32_t k_tile(int slot, int r) const { return base + slot * T::kStageBytes + r * T::kRowKvBytes; }
  __device__ std::uint32_t v_tile(int slot, int r) const { return k_tile(slot, r) + T::kKTileBytes; }
  // This warpgroup's kv head: its row's tiles, and the byte of a tile row where its head starts.
  __device__ std::uint32_t k_tile(int slot) const {
    return T::kKvHeadsPerCta == 1 ? base + slot * T::kStageBytes : k_tile(slot, warpgroup / T::kHeadsPerRow);
  }
  __device__ std::uint32_t v_tile(int slot) const { return k_tile(slot) + T::kKTileBytes; }
  __device__ int k_column() const { return warpgroup % T::kHeadsPerRow * T::kHeadDim * T::kKBytes; }
  __device__ int v_column() const { return warpgroup % T::kHeadsPerRow * T::kHeadDim * T::kVBytes; }
  __device__ std::uint32_t q_tile() const { return base + T::kQOffset + block(); }
  __device__ std::uint32_t p_tile() const { return base + T::kPOffset + block(); }
  __device__ std::uint32_t row_max() const { return base + T::kRowMaxOffset + block(); }
  __device__ std::uint32_t q_scales() const { return base + T::kQScaleOffset + block(); }
  __device__ std::uint32_t l_sums() const { return base + T::kLSumOffset + block(); }
  __device__ std::uint32_t full_bar(int slot) const { return base + T::kBarrierOffset + slot * 8; }
  __device__ std::uint32_t empty_bar(int slot) const { return base + T::kBarrierOffset + (T::kStages + slot) * 8; }
  // Arrivals that free a slot: each consumer warp of every kv head, once a warp for the TMA
  // ring and once a lane for the cp.async ring. racecheck tracks cp.async's writes (not TMA's)
  // and orders a lane's reads before them only through that lane's own arrive, not through
  // __syncwarp and another lane's.
  static constexpr std::uint32_t kEmptyArrivals = T::kConsumerWarps * T::kKvHeadsPerCta * (T::kCpAsyncRing ? 32 : 1);
  // A consumer warp is done reading the slot (all its lanes call this).
  __device__ void release(int slot, int lane) const {
    if constexpr (T::kCpAsyncRing) {
      mbarrier_arrive(empty_bar(slot));
    } else {
      __syncwarp();
      if (lane == 0) mbarrier_arrive(empty_bar(slot));
    }
  }
  // The named barrier of this consumer warpgroup (ids 1 and 2; 0 is __syncthreads).
  __device__ void consumer_barrier() const {
    if constexpr (T::kWarpgroups == 1) {
      warpgroup_barrier();
    } else {
      warpgroup_barrier(1 + warpgroup);
    }
  }
};

// ============================================================================
// producer: k_load, v_load
// ============================================================================

// Page of the box `box` of tile `tile` of request `batch`'s range from token `begin` (its first
// token clamped into the page table: a box past the end of the split is still loaded, so every
// tile brings the same bytes; and the read needs no length).
__device__ __forceinline__ int wgmma_box_page(const DecodeArgs& a, int batch, int begin, int tile, int box,
                                              int box_tokens, int* slot_in_page) {
  const int token = begin + 64 * tile + box * box_tokens;
  const int page_index = min(token / a.page_size, a.max_pages_per_seq - 1);
  *slot_in_page = token % a.page_size;
  return a.page_table[static_cast<std::size_t>(batch) * a.max_pages_per_seq + page_index];
}

// The producer lane's part of every tile: the column block `block` of page piece `piece` of K
// and of V (lane i: block i % kBlocks of piece i / kBlocks; at most 8 pieces x 4 blocks: every
// lane), and whether the tile has that piece.
template <class T>
struct ProducerLane {
  static constexpr int kBlocks = T::KTile::kBlocks > T::VTile::kBlocks ? int(T::KTile::kBlocks)
                                                                       : int(T::VTile::kBlocks);
  static_assert(kBlocks * (T::kTileTokens / 8) <= 32, "one lane per box of the smallest pages");
  int piece, block;
  bool issues;
  __device__ ProducerLane(int lane, int box_tokens)
      : piece(lane / kBlocks), block(lane % kBlocks), issues(lane / kBlocks < T::kTileTokens / box_tokens) {}
};

// The page-table entry of the producer lane's box of the CTA's first tile, read first thing
// after the grid's dependency wait: from the block index alone (cta_work's split and request),
// so that it is in flight beside the length read instead of after it and after the barriers'
// set-up, which no load moves across. At B = 1 every CTA's first tile waits on it (a trace put
// the first request 2.3 us after the CTA's start with the read after them:
// bench/results/wgmma-trace/).
struct BoxPage {
  int page = 0, slot_in_page = 0;
};

template <class T>
__device__ __forceinline__ BoxPage wgmma_first_box_page(const KernelParams& p, int lane) {
  const DecodeArgs& a = p.args;
  const int box_tokens = wgmma_box_tokens(a.page_size);
  const ProducerLane<T> pl(lane, box_tokens);
  BoxPage first;
  if (pl.issues)
    first.page =
        wgmma_box_page(a, blockIdx.z, blockIdx.x * a.split_tokens, 0, pl.piece, box_tokens, &first.slot_in_page);
  return first;
}

// first: the lane's box page of tile 0 (wgmma_first_box_page).
template <class T>
__device__ __forceinline__ void wgmma_producer(const WgmmaParams& p, const CtaWork& w, const WgmmaSmem<T>& sm,
                                               int tiles, BoxPage first, int lane) {
  const DecodeArgs& a = p.base.args;
  using KTile = typename T::KTile;
  using VTile = typename T::VTile;
#ifdef TILEPATH_KERNEL_TRACE
  TP_START_WHEN(4, true);
#endif
  const int box_tokens = wgmma_box_tokens(a.page_size);
  const ProducerLane<T> pl(lane, box_tokens);
  const int piece = pl.piece, block = pl.block;
  const bool issues = pl.issues;
  int next_slot_in_page = first.slot_in_page;
  int next_page = first.page;
#pragma unroll 1
  for (int tile = 0; tile < tiles; ++tile) {
    const int slot = tile % T::kStages;
    const int page = next_page, slot_in_page = next_slot_in_page;
    // the next tile's page-table read goes out before the wait for a free slot
    if (issues && tile + 1 < tiles)
      next_page = wgmma_box_page(a, w.batch, w.begin, tile + 1, piece, box_tokens, &next_slot_in_page);
    TP_NOW(free_wait);
    if (tile >= T::kStages) mbarrier_wait(sm.empty_bar(slot), ((tile / T::kStages) - 1) & 1);
    TP_ADD(2, free_wait, 32 * T::kConsumerWarps * T::kWarpgroups);
    if (lane == 0) mbarrier_arrive_expect_tx(sm.full_bar(slot), T::kStageBytes);
    __syncwarp();
#ifdef TILEPATH_KERNEL_TRACE
    TP_START_WHEN(5, tile == 0);
#endif
    if (issues) {
      const int byte0 = block * 128;  // the block's first byte of a row (a 64-byte row is one block)
      // the CTA's rows of kv heads (the maps' second coordinate counts rows of kHeadsPerRow heads)
      const int row0 = w.kv_head / T::kHeadsPerRow;
#pragma unroll
      for (int r = 0; r < T::kKvHeadsPerCta / T::kHeadsPerRow; ++r) {
        if (block < KTile::kBlocks)  // k_load
          tma_load_4d(sm.k_tile(slot, r) + KTile::offset(piece * box_tokens, byte0), &p.k_map, byte0, row0 + r,
                      slot_in_page, page, sm.full_bar(slot));
        if (block < VTile::kBlocks)  // v_load
          tma_load_4d(sm.v_tile(slot, r) + VTile::offset(piece * box_tokens, byte0), &p.v_map, byte0, row0 + r,
                      slot_in_page, page, sm.full_bar(slot));
      }
    }
#ifdef TILEPATH_KERNEL_TRACE
    if (tile == 0 && lane == 0) tp_trace[0] = clock64();  // the ring's first request out
#endif
  }
}

// The cp.async ring's producer (WgmmaCpAsyncRingTraits): k_load and v_load of each 64-token
// tile as 16-byte cp.async chunks, token by token through the page table, into the slot's
// swizzled tiles; tokens past the split's end are zero-filled without a read. Lane i holds the
// pool row (of the CTA's first kv heads) of tokens i and i + 32 of a tile, read a tile ahead,
// before the wait for a free slot, as the TMA producer reads its page-table entries. With one
// producer warp it gathers K then V; with two, warp 0 gathers K and warp 1 V. Each producer
// lane's copies arrive on the slot's full barrier when they have landed (32 arrivals a warp a
// phase: the barrier's count for this ring).
struct TileRows {
  std::uint32_t row[2];  // tokens lane and lane + 32 of the tile; ~0u past the end
};

template <class T>
__device__ __forceinline__ TileRows wgmma_tile_rows(const KernelParams& p, const CtaWork& w, int tile,
                                                    std::uint32_t kv_rows_per_token, std::uint32_t row0, int lane) {
  const DecodeArgs& a = p.args;
  TileRows t;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int token = w.begin + T::kTileTokens * tile + 32 * h + lane;
    // clamped into the row, so the read need not wait for the length; discarded past the end
    const int page_index =
        min(p.page_shift >= 0 ? token >> p.page_shift : token / a.page_size, a.max_pages_per_seq - 1);
    const int slot = p.page_shift >= 0 ? token & (a.page_size - 1) : token % a.page_size;
    const int page = a.page_table[static_cast<std::size_t>(w.batch) * a.max_pages_per_seq + page_index];
    const std::uint32_t pool_token = static_cast<std::uint32_t>(page) * a.page_size + slot;
    t.row[h] = token < w.end ? pool_token * kv_rows_per_token + row0 : ~0u;
  }
  return t;
}

// One operand's gather as a warp issues it: every warp-wide step copies whole ring rows of
// kTokensPerStep tokens, consecutive lanes on consecutive 16-byte chunks, so that a lane's
// chunk of a row (and the ring row r of the CTA's kv heads it falls in) is the same in every
// step and only the token changes. Its source is then one shuffle of the token's pool row and
// one multiply-add, and its place in the swizzled tile a per-lane offset that repeats every 8
// tokens plus a constant of the step.
template <class T, class Tile>
struct TileGather {
  static constexpr int kChunks = Tile::kRowBytes / 16;                                   // of a ring row
  static constexpr int kChunksPerToken = T::kKvHeadsPerCta / T::kHeadsPerRow * kChunks;  // every ring row
  static constexpr int kTokensPerStep = 32 / kChunksPerToken;
  static constexpr int kSteps = T::kTileTokens / kTokensPerStep;
  // steps after which a lane's swizzle phase repeats (the phase has a period of 8 rows)
  static constexpr int kPhases = kTokensPerStep >= 8 ? 1 : 8 / kTokensPerStep;
  static_assert(32 % kChunksPerToken == 0, "whole ring rows per step");

  const char* src;             // the lane's chunk of row 0 of the pool
  std::uint32_t dst[kPhases];  // the lane's chunk in steps 0 .. kPhases - 1, from the tile's start
  int ring_row;                // ring row of the CTA's kv heads the lane copies
  int token;                   // the lane's token within a step

  __device__ TileGather(const void* pool, int lane) {
    const int c = lane % kChunksPerToken;
    ring_row = c / kChunks;
    token = lane / kChunksPerToken;
    src = static_cast<const char*>(pool) + static_cast<std::size_t>(ring_row) * Tile::kRowBytes + 16 * (c % kChunks);
#pragma unroll
    for (int q = 0; q < kPhases; ++q) dst[q] = Tile::offset(q * kTokensPerStep + token, 16 * (c % kChunks));
  }

  // k_load or v_load of one tile into tile_of(ring row); kChecked: the tile passes the split's end.
  template <bool kChecked, class TileOf>
  __device__ __forceinline__ void copy(const TileRows& t, TileOf tile_of) const {
    const std::uint32_t tile = tile_of(ring_row);
#pragma unroll
    for (int step = 0; step < kSteps; ++step) {
      constexpr int kRowsPerPhaseCycle = kPhases * kTokensPerStep;  // tokens, a multiple of 8
      const int first = step * kTokensPerStep;                      // the step's first token
      const std::uint32_t row = __shfl_sync(0xffffffffu, t.row[first / 32], first % 32 + token);
      const std::uint32_t to = tile + dst[step % kPhases] +
                               static_cast<std::uint32_t>(step / kPhases * kRowsPerPhaseCycle * Tile::kSwizzleBytes);
      if constexpr (kChecked) {
        const bool valid = row != ~0u;
        cp_async_16(to, src + (valid ? static_cast<std::size_t>(row) * Tile::kRowBytes : 0), valid);
      } else {
        cp_async_16(to, src + static_cast<std::size_t>(row) * Tile::kRowBytes, true);
      }
    }
  }
};

template <class T>
__device__ __forceinline__ void wgmma_producer_cp_async(const WgmmaParams& p, const CtaWork& w, const WgmmaSmem<T>& sm,
                                                        int tiles, int producer, int lane) {
  const DecodeArgs& a = p.base.args;
  const std::uint32_t kv_rows_per_token = a.kv_heads / T::kHeadsPerRow;  // rows of the pool per token
  const std::uint32_t row0 = w.kv_head / T::kHeadsPerRow;                // the CTA's first row of kv heads
  const bool loads_k = T::kProducerWarps == 1 || producer == 0;
  const bool loads_v = T::kProducerWarps == 1 || producer == 1;
  const TileGather<T, typename T::KTile> k_gather(a.k_pages, lane);
  const TileGather<T, typename T::VTile> v_gather(a.v_pages, lane);
  TileRows next{};
  if (tiles > 0) next = wgmma_tile_rows<T>(p.base, w, 0, kv_rows_per_token, row0, lane);
#pragma unroll 1
  for (int tile = 0; tile < tiles; ++tile) {
    const int slot = tile % T::kStages;
    const TileRows now = next;
    if (tile + 1 < tiles) next = wgmma_tile_rows<T>(p.base, w, tile + 1, kv_rows_per_token, row0, lane);
    if (tile >= T::kStages) mbarrier_wait(sm.empty_bar(slot), ((tile / T::kStages) - 1) & 1);
    const auto k_tile = [&](int r) { return sm.k_tile(slot, r); };
    const auto v_tile = [&](int r) { return sm.v_tile(slot, r); };
    if (w.begin + T::kTileTokens * (tile + 1) <= w.end) {       // every token of the tile is the split's
      if (loads_k) k_gather.template copy<false>(now, k_tile);  // k_load
      if (loads_v) v_gather.template copy<false>(now, v_tile);  // v_load
    } else {
      if (loads_k) k_gather.template copy<true>(now, k_tile);
      if (loads_v) v_gather.template copy<true>(now, v_tile);
    }
    cp_async_mbarrier_arrive_noinc(sm.full_bar(slot));
  }
  cp_async_wait_all();  // no lane leaves with copies of its own in flight
}

// ============================================================================
// consumer: q_quant, qk, softmax, v_prep, pv, accum
// ============================================================================

// One query row's part for thread tid of the warpgroup: head tid/16, the D/16 consecutive d
// from d0 = (tid % 16)·D/16, as floats (bf16 -> f32 is exact), and the head's amax|q| over its
// 16 threads. Rows of heads past the group are zeros.
template <class T>
struct QRowPart {
  static constexpr int kElems = T::kHeadDim / 16;
  int head, d0;
  float x[kElems];
  float amax;
};

template <class T>
__device__ __forceinline__ QRowPart<T> load_q_row_part(const KernelParams& p, const CtaWork& w, int tid) {
  const DecodeArgs& a = p.args;
  QRowPart<T> q;
  q.head = tid / 16;
  q.d0 = (tid % 16) * QRowPart<T>::kElems;
  const bool live = q.head < w.heads;
  const std::uint16_t* row = a.q + (static_cast<std::size_t>(w.batch) * a.q_heads + w.head0 + q.head) * T::kHeadDim;
  q.amax = 0.0f;
#pragma unroll
  for (int v = 0; v < QRowPart<T>::kElems / 4; ++v) {  // 8-byte loads: 4 bf16
    const uint2 raw = live ? *reinterpret_cast<const uint2*>(row + q.d0 + 4 * v) : make_uint2(0, 0);
    const std::uint32_t words[2] = {raw.x, raw.y};
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      q.x[4 * v + 2 * k] = __uint_as_float(words[k] << 16);
      q.x[4 * v + 2 * k + 1] = __uint_as_float(words[k] & 0xFFFF0000u);
    }
  }
#pragma unroll
  for (int e = 0; e < QRowPart<T>::kElems; ++e) q.amax = fmaxf(q.amax, fabsf(q.x[e]));
#pragma unroll
  for (int mask = 1; mask < 16; mask <<= 1) q.amax = fmaxf(q.amax, __shfl_xor_sync(0xffffffffu, q.amax, mask));
  return q;
}

// q_quant: Qᵀ's operand tile = e4m3(q / s), s = amax|q| / 448 per query head (the float ops
// of reference_decode, the division done as in the mma.sync kernel's q_quant).
template <class T>
__device__ __forceinline__ void wgmma_q_quant(const KernelParams& p, const CtaWork& w, const WgmmaSmem<T>& sm,
                                              int tid) {
  const QRowPart<T> q = load_q_row_part<T>(p, w, tid);
  const float scale = q.amax > 0.0f ? q.amax / 448.0f : 1.0f;
  // RN(x / scale) without IEEE divisions (Markstein; see q_quant in decode_kernel.cuh)
  const float pre = scale < 0x1p-100f ? 0x1p64f : 1.0f;
  const float s = scale * pre;
  const float y = __frcp_rn(s);
  float q8[QRowPart<T>::kElems];
#pragma unroll
  for (int e = 0; e < QRowPart<T>::kElems; ++e) {
    const float v = q.x[e] * pre;
    const float q0 = __fmul_rn(v, y);
    q8[e] = copysignf(__fmaf_rn(__fmaf_rn(-s, q0, v), y, q0), v);
  }
#pragma unroll
  for (int v = 0; v < QRowPart<T>::kElems / 4; ++v) {  // 4 bytes at a time, inside one 16-byte chunk
    const std::uint32_t word = pack_e4m3x4(q8[4 * v], q8[4 * v + 1], q8[4 * v + 2], q8[4 * v + 3]);
    asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(sm.q_tile() + T::QTile::offset(q.head, q.d0 + 4 * v)), "r"(word)
                 : "memory");
  }
  if (tid % 16 == 0) sts_f32(sm.q_scales() + q.head * 4, scale);
}

// Qᵀ's BF16 operand tile (k16): Q as given, each d at its own k (K is read from the ring in
// its own order); the Q scale is 1.
template <class T>
__device__ __forceinline__ void wgmma_q_to_bf16(const KernelParams& p, const CtaWork& w, const WgmmaSmem<T>& sm,
                                                int tid) {
  const DecodeArgs& a = p.args;
  constexpr int kElems = T::kHeadDim / 16;
  const int head = tid / 16, d0 = (tid % 16) * kElems;
  const std::uint16_t* row = a.q + (static_cast<std::size_t>(w.batch) * a.q_heads + w.head0 + head) * T::kHeadDim;
#pragma unroll
  for (int v = 0; v < kElems / 4; ++v) {  // 8 bytes: 4 bf16, inside one 16-byte chunk
    const uint2 raw = head < w.heads ? *reinterpret_cast<const uint2*>(row + d0 + 4 * v) : make_uint2(0, 0);
    const std::uint32_t at = sm.q_tile() + T::QTile::offset(head, 2 * (d0 + 4 * v));
    asm volatile("st.shared.v2.u32 [%0], {%1, %2};\n" ::"r"(at), "r"(raw.x), "r"(raw.y) : "memory");
  }
  if (tid % 16 == 0) sts_f32(sm.q_scales() + head * 4, 1.0f);
}

// The k order of the transform path's K fragments (wgmma_k_prep): logical k of QK's reduction
// for physical d. Lane t of a quad reads 16-byte chunks t, t + 4, .. of its token rows; k16
// step s takes 4 d of one chunk, (2t, 2t+1 | 2t+8, 2t+9) + 16s in wgmma's A layout.
__device__ __forceinline__ int transform_k_of_d(int d) {
  const int chunk = d / 16, e = d % 16, t = chunk % 4, step = 4 * (chunk / 4) + e / 4, j = e % 4;
  return 16 * step + 2 * t + (j & 1) + 8 * (j >> 1);
}

// Qᵀ's F16 operand tile (transform): q·2^shift per head, its amax brought into [2^14, 2^15)
// (q_to_f16 in decode_kernel.cuh: every BF16 element down to 2^-28 of the amax converts
// exactly, none overflows), each d at its logical k (D/64 atoms of 1024 bytes along k);
// 2^-shift goes where fp8_qk puts the Q scale.
template <class T>
__device__ __forceinline__ void wgmma_q_to_f16(const KernelParams& p, const CtaWork& w, const WgmmaSmem<T>& sm,
                                               int tid) {
  const QRowPart<T> q = load_q_row_part<T>(p, w, tid);
  int exponent = 0;
  frexpf(q.amax, &exponent);
  const int shift = q.amax > 0.0f ? max(-100, min(100, 15 - exponent)) : 0;
  const float up = __int_as_float((127 + shift) << 23);
#pragma unroll
  for (int e = 0; e < QRowPart<T>::kElems; e += 2) {
    const std::uint32_t h2 = pack_f16x2(q.x[e] * up, q.x[e + 1] * up);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int k = transform_k_of_d(q.d0 + e + i);
      sts_u16(sm.q_tile() + T::QTile::offset(q.head, 2 * k), i == 0 ? h2 & 0xFFFFu : h2 >> 16);
    }
  }
  if (tid % 16 == 0) sts_f32(sm.q_scales() + q.head * 4, __int_as_float((127 - shift) << 23));
}

// k_prep (transform): the warp's K rows 16w+g and 16w+g+8, chunks t, t+4, .. of its head (from
// byte k_col of the tile's rows), as F16 A fragments of the D/16 k16 steps: kf[step][0..3] =
// wgmma's a0..a3. E4M3 -> F16 is exact.
template <class T>
__device__ __forceinline__ void wgmma_k_prep(std::uint32_t k_tile, int k_col, int warp, int lane,
                                             std::uint32_t (&kf)[T::kHeadDim / 16][4]) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int half = 0; half < T::kHeadDim / 64; ++half) {
    const int chunk = t + 4 * half;
    std::uint32_t lo[8], hi[8];  // rows 16w+g and 16w+g+8
    convert_chunk_e4m3_to_f16(lds_128(k_tile + T::KTile::offset(16 * warp + g, k_col + 16 * chunk)), lo);
    convert_chunk_e4m3_to_f16(lds_128(k_tile + T::KTile::offset(16 * warp + g + 8, k_col + 16 * chunk)), hi);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      kf[4 * half + j][0] = lo[2 * j];
      kf[4 * half + j][1] = hi[2 * j];
      kf[4 * half + j][2] = lo[2 * j + 1];
      kf[4 * half + j][3] = hi[2 * j + 1];
    }
  }
}

// The transform path's QK steps: HGMMA k16 steps with K's F16 A fragments in registers.
template <class T>
__device__ __forceinline__ void wgmma_qk_f16_rs_steps(float (&s)[4], const std::uint32_t (&kf)[T::kHeadDim / 16][4],
                                                      std::uint32_t q_tile) {
  wgmma_fence();
#pragma unroll
  for (int step = 0; step < T::kHeadDim / 16; ++step) {
    wgmma_m64n8k16_f16_rs(s, kf[step][0], kf[step][1], kf[step][2], kf[step][3], T::QTile::desc(q_tile, 32 * step));
  }
}

// The end of QK's wgmma group: issued, waited for, and S fenced for the registers' readers.
__device__ __forceinline__ void wgmma_qk_wait(float (&s)[4]) {
  wgmma_commit();
  wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < 4; ++i) wgmma_operand_fence(s[i]);
}

// qk: S(64 tok, 8 heads) = K(64, D) · Qᵀ(D, 8); lane (warp w, g, t) gets s[0..3] =
// S(16w+g, 2t), S(16w+g, 2t+1), S(16w+g+8, 2t), S(16w+g+8, 2t+1). K of the warpgroup's head
// starts at byte k_col of the K tile's rows.
//   fp8_qk:    QGMMA, D/32 k32 steps, K straight from the ring
//   transform: HGMMA, D/16 k16 steps, K from k_prep's registers
//   k16:       HGMMA (BF16), D/16 k16 steps, K straight from the ring
template <class T>
__device__ __forceinline__ void wgmma_qk(float (&s)[4], std::uint32_t k_tile, int k_col, std::uint32_t q_tile, int warp,
                                         int lane) {
  if constexpr (T::kQFp8) {
    wgmma_fence();
#pragma unroll
    for (int step = 0; step < T::kHeadDim / 32; ++step) {
      wgmma_m64n8k32_e4m3_ss(s, T::KTile::desc(k_tile, k_col + 32 * step), T::QTile::desc(q_tile, 32 * step), step > 0);
    }
  } else if constexpr (T::kK == KOperand::bf16) {
    wgmma_fence();
#pragma unroll
    for (int step = 0; step < T::kHeadDim / 16; ++step) {  // 32 bytes of K per row a step, as FP8's k32
      wgmma_m64n8k16_bf16_ss(s, T::KTile::desc(k_tile, k_col + 32 * step), T::QTile::desc(q_tile, 32 * step), step > 0);
    }
  } else {
    std::uint32_t kf[T::kHeadDim / 16][4];
    wgmma_k_prep<T>(k_tile, k_col, warp, lane, kf);  // K' = f16(K8)
    wgmma_qk_f16_rs_steps<T>(s, kf, q_tile);
  }
  wgmma_qk_wait(s);
}

// The column of Pᵀ's tile where token `token` (0..63) of the tile sits: the k order of the
// Vᵀ fragments (read_v_fp8 + v_transpose_fp8 for E4M3; v_convert for F16 and the BF16
// ldmatrix.trans keep the tokens in order).
template <class T>
__device__ __forceinline__ int p_column_byte(int token) {
  if constexpr (T::kPFp8) {
    const int r = token & 31, q = r & 15;
    return (token & 32) + (r & 16) + 4 * ((q & 7) >> 1) + 2 * (q >> 3) + (q & 1);
  } else {
    return 2 * token;
  }
}

// Online softmax state: the warpgroup keeps one running max per head; each lane its share of
// the denominator of heads 2t and 2t+1.
struct WgmmaSoftmaxState {
  float m[2];
  float l[2];
};

// m' = max(m, max_t S·c);  P = 2^(S·c − m');  l' = l·2^(m−m') + ΣP;  alpha = 2^(m−m') per head.
// P is written into Pᵀ's tile (E4M3 x256, F16 or BF16: the type V is multiplied in).
template <class T>
__device__ __forceinline__ void wgmma_softmax(const float (&s)[4], const float (&row_scale)[2], int valid, int warp,
                                              int lane, const WgmmaSmem<T>& sm, WgmmaSoftmaxState& st,
                                              float (&alpha)[2]) {
  const int g = lane / 4, t = lane % 4;
  const int tok_a = 16 * warp + g, tok_b = tok_a + 8;
  float x[4];
  x[0] = tok_a < valid ? s[0] * row_scale[0] : -INFINITY;
  x[1] = tok_a < valid ? s[1] * row_scale[1] : -INFINITY;
  x[2] = tok_b < valid ? s[2] * row_scale[0] : -INFINITY;
  x[3] = tok_b < valid ? s[3] * row_scale[1] : -INFINITY;
  float mx[2] = {fmaxf(x[0], x[2]), fmaxf(x[1], x[3])};
#pragma unroll
  for (int mask = 4; mask < 32; mask <<= 1) {
    mx[0] = fmaxf(mx[0], __shfl_xor_sync(0xffffffffu, mx[0], mask));
    mx[1] = fmaxf(mx[1], __shfl_xor_sync(0xffffffffu, mx[1], mask));
  }
  const std::uint32_t row_max = sm.row_max();
  if (g == 0) {
    sts_f32(row_max + (warp * 8 + 2 * t) * 4, mx[0]);
    sts_f32(row_max + (warp * 8 + 2 * t + 1) * 4, mx[1]);
  }
  sm.consumer_barrier();
  float e[4];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float tile_max = -INFINITY;
#pragma unroll
    for (int u = 0; u < T::kConsumerWarps; ++u) tile_max = fmaxf(tile_max, lds_f32(row_max + (u * 8 + 2 * t + h) * 4));
    const float m_new = fmaxf(st.m[h], tile_max);
    const float m_use = m_new == -INFINITY ? 0.0f : m_new;  // a fully masked head stays 0, not NaN
    alpha[h] = fast_exp2(st.m[h] - m_use);
    e[h] = fast_exp2(x[h] - m_use);
    e[2 + h] = fast_exp2(x[2 + h] - m_use);
    st.l[h] = st.l[h] * alpha[h] + e[h] + e[2 + h];
    st.m[h] = m_new;
  }
  const std::uint32_t p_tile = sm.p_tile();
  const int col_a = p_column_byte<T>(tok_a), col_b = p_column_byte<T>(tok_b);
  if constexpr (T::kPFp8) {
    const std::uint32_t pa = pack_e4m3x2(e[0] * kPFp8Scale, e[1] * kPFp8Scale);
    const std::uint32_t pb = pack_e4m3x2(e[2] * kPFp8Scale, e[3] * kPFp8Scale);
    sts_u8(p_tile + T::PTile::offset(2 * t, col_a), pa & 0xFFu);
    sts_u8(p_tile + T::PTile::offset(2 * t + 1, col_a), (pa >> 8) & 0xFFu);
    sts_u8(p_tile + T::PTile::offset(2 * t, col_b), pb & 0xFFu);
    sts_u8(p_tile + T::PTile::offset(2 * t + 1, col_b), (pb >> 8) & 0xFFu);
  } else {
    const std::uint32_t pa = T::kPBf16 ? pack_bf16x2(e[0], e[1]) : pack_f16x2(e[0], e[1]);
    const std::uint32_t pb = T::kPBf16 ? pack_bf16x2(e[2], e[3]) : pack_f16x2(e[2], e[3]);
    sts_u16(p_tile + T::PTile::offset(2 * t, col_a), pa & 0xFFFFu);
    sts_u16(p_tile + T::PTile::offset(2 * t + 1, col_a), pa >> 16);
    sts_u16(p_tile + T::PTile::offset(2 * t, col_b), pb & 0xFFFFu);
    sts_u16(p_tile + T::PTile::offset(2 * t + 1, col_b), pb >> 16);
  }
}

// v_prep: the warp's Vᵀ A-fragments for the D/64 m64 blocks (d-chunk c = 4·mb + warp, 16 d)
// over the 64 tokens, V of the warpgroup's head starting at byte v_col of the V tile's rows.
//   E4M3 V: per 32 tokens one ldmatrix.x4.trans of the swizzled V rows, then the E4M3
//     transpose (k_only) or the exact F16 conversion (full). Fragment row g <-> d 16c + 2g,
//     row g + 8 <-> d 16c + 2g + 1 (o_row_to_d of the mma.sync kernel's E4M3 V).
//   BF16 V: per 16 tokens one ldmatrix.x4.trans (tokens 0-7 | 8-15 x d 0-7 | 8-15) is the
//     fragment as it is: row g <-> d 16c + g, row g + 8 <-> d 16c + 8 + g.
template <class T>
__device__ __forceinline__ void wgmma_v_prep(std::uint32_t v_tile, int v_col, int warp, int lane,
                                             VFragment (&v)[T::kMBlocks][2]) {
#pragma unroll
  for (int mb = 0; mb < T::kMBlocks; ++mb) {
    const int chunk = 4 * mb + warp;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      if constexpr (T::kPBf16) {
#pragma unroll
        for (int step = 0; step < 2; ++step) {
          const int row = 32 * half + 16 * step + ((lane >> 4) << 3) + (lane & 7);
          std::uint32_t r[4];
          ldmatrix_x4_trans(v_tile + T::VTile::offset(row, v_col + 32 * chunk + 16 * ((lane >> 3) & 1)), r);
#pragma unroll
          for (int i = 0; i < 4; ++i) v[mb][half].a[4 * step + i] = r[i];
        }
      } else {
        std::uint32_t r[4];
        ldmatrix_x4_trans(v_tile + T::VTile::offset(32 * half + lane, v_col + 16 * chunk), r);
        if constexpr (T::kPFp8) {
          v_transpose_fp8(r, v[mb][half]);
        } else {
          v_convert(r, v[mb][half]);
        }
      }
    }
  }
}

// The d of Oᵀ's fragment row g (upper = 0) or g + 8 (upper = 1) in d-chunk c (wgmma_v_prep).
template <class T>
__device__ __forceinline__ int wgmma_o_row_to_d(int chunk, int g, int upper) {
  return T::kPBf16 ? 16 * chunk + 8 * upper + g : 16 * chunk + 2 * g + upper;
}

// pv: Oᵀ(D, 8) += Vᵀ(D, 64 tok) · Pᵀ(64 tok, 8): QGMMA k32 (E4M3) or HGMMA k16 (F16, BF16) steps
// against the Pᵀ tile; the accumulators were rescaled by alpha (accum) beforehand.
template <class T>
__device__ __forceinline__ void wgmma_pv(float (&o)[T::kMBlocks][4], const VFragment (&v)[T::kMBlocks][2],
                                         std::uint32_t p_tile) {
  wgmma_fence();
#pragma unroll
  for (int mb = 0; mb < T::kMBlocks; ++mb) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      if constexpr (T::kPFp8) {
        const std::uint32_t a[4] = {v[mb][half].a[0], v[mb][half].a[1], v[mb][half].a[2], v[mb][half].a[3]};
        wgmma_m64n8k32_e4m3_rs(o[mb], a, T::PTile::desc(p_tile, 32 * half));
      } else {
#pragma unroll
        for (int step = 0; step < 2; ++step) {
          const std::uint32_t* a = &v[mb][half].a[4 * step];
          const std::uint64_t p_desc = T::PTile::desc(p_tile, 32 * (2 * half + step));
          if constexpr (T::kPBf16) {
            wgmma_m64n8k16_bf16_rs(o[mb], a[0], a[1], a[2], a[3], p_desc);
          } else {
            wgmma_m64n8k16_f16_rs(o[mb], a[0], a[1], a[2], a[3], p_desc);
          }
        }
      }
    }
  }
  wgmma_commit();
  wgmma_wait<0>();
#pragma unroll
  for (int mb = 0; mb < T::kMBlocks; ++mb) {
#pragma unroll
    for (int i = 0; i < 4; ++i) wgmma_operand_fence(o[mb][i]);
  }
}

// Rows of V past the end of the split (the last tile's tail, loaded from whatever the page
// held) are zeroed: P is 0 there, but 0 x NaN would poison PV. Each warpgroup zeroes its own
// head's part of the rows.
template <class T>
__device__ __forceinline__ void zero_v_tail(const WgmmaSmem<T>& sm, int slot, int valid, int tid) {
  constexpr int kChunks = T::kHeadDim * T::kVBytes / 16;  // per row of one head
  const std::uint32_t v_tile = sm.v_tile(slot);
  const int v_col = sm.v_column();
  for (int i = valid * kChunks + tid; i < T::kTileTokens * kChunks; i += 32 * T::kConsumerWarps)
    sts_128(v_tile + T::VTile::offset(i / kChunks, v_col + 16 * (i % kChunks)), {});
  sm.consumer_barrier();
}

// ============================================================================
// Isolated stage kernels (WgmmaIsolatedTraits): one compute stage per tile and nothing else
// ============================================================================
// As the mma.sync kernel's isolated stages (decode_kernel.cuh): a stage reads what it needs of
// the resident tile itself (k_prep and fp8_qk/k16's qk read K; v_prep and pv read V), inputs
// another stage would make are values derived from salt (0 at run time, unknown to the
// compiler), and outputs go into a running xor (sink) or O, which the kernel keeps live.
//   k_prep   K's F16 fragments (transform)
//   qk       QK's wgmma group: K from the ring (fp8_qk, k16) or opaque F16 fragments (transform)
//   softmax  from opaque S: the row-max exchange, Pᵀ's tile written and handed to the async
//            proxy (fence and warpgroup barrier), so that each of the tile's two barriers is
//            counted once and the next tile's row maxima wait for this tile's readers
//   v_prep   Vᵀ's F16 fragments of E4M3 V (full)
//   pv       V's read as PV's operand (k_only: with its E4M3 transpose; E4M3 V of full: the raw
//            bytes; BF16 V: the fragment as it is) and PV's wgmma group
//   accum    O rescaled by an opaque alpha

// Shared memory below the mbarriers, zeroed once before the barriers' set-up so that the
// stages read defined values; a cost of the intercept, not of the tiles.
template <class T>
__device__ __forceinline__ void wgmma_zero_tile_memory(std::uint32_t base) {
  for (int offset = threadIdx.x * 16; offset < T::kBarrierOffset; offset += T::kThreads * 16)
    sts_128(base + offset, make_uint4(0u, 0u, 0u, 0u));
  fence_proxy_async_shared();  // the zeros are read by wgmma
}

template <class T>
__device__ __forceinline__ void wgmma_isolated_stage_tile(const WgmmaSmem<T>& sm, int slot, int valid,
                                                          const float (&row_scale)[2], int warp, int lane,
                                                          float (&o)[T::kMBlocks][4], WgmmaSoftmaxState& st,
                                                          std::uint32_t& sink, std::uint32_t salt) {
  constexpr int kStage = T::kIsolatedStage;
  const float salt_f = __uint_as_float(salt);  // 0 at run time
  if constexpr (kStage == TP_STAGE_K_PREP) {
    std::uint32_t kf[T::kHeadDim / 16][4];
    wgmma_k_prep<T>(sm.k_tile(slot), sm.k_column(), warp, lane, kf);
#pragma unroll
    for (int step = 0; step < T::kHeadDim / 16; ++step) sink ^= kf[step][0] ^ kf[step][1] ^ kf[step][2] ^ kf[step][3];
  } else if constexpr (kStage == TP_STAGE_QK) {
    float s[4] = {};
    if constexpr (T::kK == KOperand::fp8_convert) {
      std::uint32_t kf[T::kHeadDim / 16][4];  // k_prep does not run
#pragma unroll
      for (int step = 0; step < T::kHeadDim / 16; ++step)
#pragma unroll
        for (int i = 0; i < 4; ++i) kf[step][i] = salt ^ static_cast<std::uint32_t>(4 * step + i);
      wgmma_qk_f16_rs_steps<T>(s, kf, sm.q_tile());
      wgmma_qk_wait(s);
    } else {
      wgmma_qk<T>(s, sm.k_tile(slot), sm.k_column(), sm.q_tile(), warp, lane);
    }
    sink ^= __float_as_uint(s[0]) ^ __float_as_uint(s[1]) ^ __float_as_uint(s[2]) ^ __float_as_uint(s[3]);
  } else if constexpr (kStage == TP_STAGE_SOFTMAX) {
    const float s[4] = {salt_f, 2.0f * salt_f, 3.0f * salt_f, 4.0f * salt_f};
    float alpha[2];
    wgmma_softmax<T>(s, row_scale, valid, warp, lane, sm, st, alpha);
    fence_proxy_async_shared();  // Pᵀ is read by wgmma
    sm.consumer_barrier();
    sink ^= __float_as_uint(alpha[0]) ^ __float_as_uint(alpha[1]);
  } else if constexpr (kStage == TP_STAGE_V_PREP) {
    VFragment v[T::kMBlocks][2];
    wgmma_v_prep<T>(sm.v_tile(slot), sm.v_column(), warp, lane, v);
#pragma unroll
    for (int mb = 0; mb < T::kMBlocks; ++mb)
#pragma unroll
      for (int half = 0; half < 2; ++half)
#pragma unroll
        for (int i = 0; i < 8; ++i) sink ^= v[mb][half].a[i];
  } else if constexpr (kStage == TP_STAGE_PV) {
    VFragment v[T::kMBlocks][2];
    if constexpr (T::kV == VOperand::fp8_convert) {  // the raw E4M3 bytes as F16 fragments
#pragma unroll
      for (int mb = 0; mb < T::kMBlocks; ++mb) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          std::uint32_t r[4];
          ldmatrix_x4_trans(sm.v_tile(slot) + T::VTile::offset(32 * half + lane, sm.v_column() + 16 * (4 * mb + warp)),
                            r);
#pragma unroll
          for (int i = 0; i < 4; ++i) v[mb][half].a[i] = r[i], v[mb][half].a[4 + i] = r[i] ^ salt;
        }
      }
    } else {
      wgmma_v_prep<T>(sm.v_tile(slot), sm.v_column(), warp, lane, v);
    }
    wgmma_pv<T>(o, v, sm.p_tile());  // Pᵀ as the zeroing left it: no hand-off to wait for
  } else if constexpr (kStage == TP_STAGE_ACCUM) {
    const float alpha[2] = {1.0f + salt_f, 1.0f - salt_f};
#pragma unroll
    for (int mb = 0; mb < T::kMBlocks; ++mb) {
      o[mb][0] *= alpha[0], o[mb][1] *= alpha[1], o[mb][2] *= alpha[0], o[mb][3] *= alpha[1];
    }
  }
}

template <class T>
__device__ __forceinline__ void wgmma_consumer(const WgmmaParams& p, const CtaWork& w, const WgmmaSmem<T>& sm,
                                               int tiles, int warp, int lane) {
  const DecodeArgs& a = p.base.args;
  const int tid = T::kWarpgroups == 1 ? int(threadIdx.x) : int(threadIdx.x) % (32 * T::kConsumerWarps);
  const int t = lane % 4, g = lane / 4;
  if constexpr (T::kQFp8) {
    wgmma_q_quant<T>(p.base, w, sm, tid);  // q8 = e4m3(q / s)
  } else if constexpr (T::kK == KOperand::bf16) {
    wgmma_q_to_bf16<T>(p.base, w, sm, tid);  // Q as given
  } else {
    wgmma_q_to_f16<T>(p.base, w, sm, tid);  // q16 = f16(q·2^shift)
  }
  fence_proxy_async_shared();  // Qᵀ is read by wgmma
  sm.consumer_barrier();
  TP_TRACE(2);
  const float k_scale = T::kK == KOperand::bf16 ? 1.0f : a.k_scale[a.scale_per_head ? w.kv_head : 0];
  float row_scale[2];
#pragma unroll
  for (int h = 0; h < 2; ++h)
    row_scale[h] = a.softmax_scale * kLog2e * k_scale * lds_f32(sm.q_scales() + (2 * t + h) * 4);

  float o[T::kMBlocks][4] = {};
  WgmmaSoftmaxState st{{-INFINITY, -INFINITY}, {0.0f, 0.0f}};
  std::uint32_t sink = 0;  // isolated stages' outputs
  if constexpr (T::kIsolated) {
#pragma unroll 1
    for (int tile = 0; tile < tiles; ++tile) {
      const int valid = min(T::kTileTokens, w.end - (w.begin + T::kTileTokens * tile));
      wgmma_isolated_stage_tile<T>(sm, tile % T::kStages, valid, row_scale, warp, lane, o, st, sink, p.base.salt);
    }
  } else {
#pragma unroll 1
    for (int tile = 0; tile < tiles; ++tile) {
      const int slot = tile % T::kStages;
      const int valid = min(T::kTileTokens, w.end - (w.begin + T::kTileTokens * tile));
      TP_NOW(land_wait);
      if constexpr (!T::kComputeOnly) {
        mbarrier_wait(sm.full_bar(slot), (tile / T::kStages) & 1);  // K and V of the tile landed
        // cp.async writes through the generic proxy; QK's wgmma reads K through the async one
        if constexpr (T::kCpAsyncRing) fence_proxy_async_shared();
      }
      TP_ADD(0, land_wait, 0);
      TP_NOW(landed);
      if (tile == 0) TP_TRACE(4);
      if constexpr (T::kLoadOnly) {
        sm.release(slot, lane);
        TP_ADD(1, landed, 0);
        continue;
      }
      if (valid < T::kTileTokens) zero_v_tail<T>(sm, slot, valid, tid);

      float s[4] = {};
      wgmma_qk<T>(s, sm.k_tile(slot), sm.k_column(), sm.q_tile(), warp, lane);  // S = K·Qᵀ
      TP_ADD(3, landed, 0);
      TP_NOW(qk_done);
      float alpha[2];
      wgmma_softmax<T>(s, row_scale, valid, warp, lane, sm, st, alpha);  // P = 2^(S·c − m)
      TP_ADD(4, qk_done, 0);
      TP_NOW(softmax_done);
      VFragment v[T::kMBlocks][2];
      wgmma_v_prep<T>(sm.v_tile(slot), sm.v_column(), warp, lane, v);  // V' = operand form of Vᵀ
      if constexpr (T::kComputeOnly) {
        __syncwarp();  // the release's, which compute_only keeps as the kernel has it
      } else {
        sm.release(slot, lane);  // K read by QK, V in registers: the slot is free
      }
      TP_ADD(5, softmax_done, 0);
      TP_NOW(released);
#pragma unroll
      for (int mb = 0; mb < T::kMBlocks; ++mb) {  // accum: O = O·alpha (columns = heads 2t, 2t+1)
        o[mb][0] *= alpha[0], o[mb][1] *= alpha[1], o[mb][2] *= alpha[0], o[mb][3] *= alpha[1];
      }
      fence_proxy_async_shared();  // Pᵀ is read by wgmma
      sm.consumer_barrier();
      wgmma_pv<T>(o, v, sm.p_tile());  // O += V'ᵀ·Pᵀ
      TP_ADD(6, released, 0);
      TP_ADD(1, landed, 0);
      if (tile < 2) TP_TRACE(5 + tile);
    }
  }
  TP_TRACE(3);
  if constexpr (T::kIsolated) {  // keeps the isolated stage's inputs and outputs live
#pragma unroll
    for (int mb = 0; mb < T::kMBlocks; ++mb)
#pragma unroll
      for (int i = 0; i < 4; ++i) sink ^= __float_as_uint(o[mb][i]);
    if (p.base.salt == 0xFFFFFFFFu && sink == 0x9E3779B9u) a.out[0] = 0;
  }

  // The heads' denominators: over the lanes of a column (g), then the 4 warps.
  float l[2] = {st.l[0], st.l[1]};
#pragma unroll
  for (int mask = 4; mask < 32; mask <<= 1) {
    l[0] += __shfl_xor_sync(0xffffffffu, l[0], mask);
    l[1] += __shfl_xor_sync(0xffffffffu, l[1], mask);
  }
  const std::uint32_t l_sum = sm.l_sums();
  if (g == 0) {
    sts_f32(l_sum + (warp * 8 + 2 * t) * 4, l[0]);
    sts_f32(l_sum + (warp * 8 + 2 * t + 1) * 4, l[1]);
  }
  sm.consumer_barrier();
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l[h] = 0.0f;
#pragma unroll
    for (int u = 0; u < T::kConsumerWarps; ++u) l[h] += lds_f32(l_sum + (u * 8 + 2 * t + h) * 4);
  }
  TP_TRACE(7);

  const float v_scale = T::kV == VOperand::bf16 ? 1.0f : w.v_scale;
  const float out_scale = v_scale / (T::kPFp8 ? kPFp8Scale : 1.0f);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int head = 2 * t + h;
    if (head >= w.heads) continue;
    const std::size_t row = static_cast<std::size_t>(w.batch) * a.q_heads + w.head0 + head;
    const float inv = l[h] > 0.0f ? __fdividef(1.0f, l[h]) * out_scale : 0.0f;
#pragma unroll
    for (int mb = 0; mb < T::kMBlocks; ++mb) {
      const int d0 = wgmma_o_row_to_d<T>(4 * mb + warp, g, 0), d1 = wgmma_o_row_to_d<T>(4 * mb + warp, g, 1);
      const float v0 = o[mb][h] * inv, v1 = o[mb][2 + h] * inv;
      const std::size_t part = static_cast<std::size_t>(w.split) * a.batch * a.q_heads + row;
      if constexpr (!T::kPBf16) {  // E4M3-ordered V: d1 = d0 + 1, one store
        if (a.splits == 1) {
          *reinterpret_cast<std::uint32_t*>(a.out + row * T::kHeadDim + d0) = pack_bf16x2(v0, v1);
        } else {
          *reinterpret_cast<float2*>(a.partial_out + part * T::kHeadDim + d0) = make_float2(v0, v1);
        }
      } else if (a.splits == 1) {
        const std::uint32_t both = pack_bf16x2(v0, v1);
        a.out[row * T::kHeadDim + d0] = static_cast<std::uint16_t>(both & 0xFFFFu);
        a.out[row * T::kHeadDim + d1] = static_cast<std::uint16_t>(both >> 16);
      } else {
        a.partial_out[part * T::kHeadDim + d0] = v0;
        a.partial_out[part * T::kHeadDim + d1] = v1;
      }
    }
    if (a.splits > 1 && warp == 0 && g == 0) {  // log2-domain log-sum-exp of this split (-inf: no token)
      const std::size_t part = static_cast<std::size_t>(w.split) * a.batch * a.q_heads + row;
      a.partial_lse[part] = l[h] > 0.0f ? st.m[h] + __log2f(l[h]) : -INFINITY;
    }
  }
}

// ============================================================================
// The kernel
// ============================================================================

template <class T>
__global__ void __launch_bounds__(T::kThreads, T::kMinCtasPerSm)
    decode_wgmma_kernel(const __grid_constant__ WgmmaParams p) {
  extern __shared__ __align__(1024) char wgmma_smem[];
#ifdef TILEPATH_KERNEL_TRACE
  const unsigned long long g0 = tp_gtime();
  const long long c0 = clock64();
  if (threadIdx.x == 0) {                          // published by the __syncthreads below
    for (int i = 0; i < 8; ++i) tp_trace[i] = c0;  // an unset stamp reads 0 cycles
    for (int i = 0; i < kTpRingSlots; ++i) tp_ring[i] = 0;
  }
  // The start's stamps, which the producer's first lane takes before that barrier: set by it.
  if (threadIdx.x == T::kConsumerWarps * T::kWarpgroups * 32)
    for (int i = 0; i < kTpStartSlots; ++i) tp_start[i] = c0;
#endif
  // Programmatic dependent launch, as the mma.sync kernel: wait for the previous kernel first.
  grid_dependency_wait();
  grid_dependents_launch();
  TP_TRACE(1);
  constexpr int kConsumers = T::kConsumerWarps * T::kWarpgroups;  // warps; the producers are the next
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // The TMA ring's producer is the one warp after the consumers (so written, its kernels keep
  // their code); the cp.async ring's are every warp after them.
  const bool producer = T::kProducerWarps == 1 ? warp == kConsumers : warp >= kConsumers;
  BoxPage first_page;
  if constexpr (!T::kCpAsyncRing) {
    if (warp == kConsumers) first_page = wgmma_first_box_page<T>(p.base, lane);
  }
  // A consumer warpgroup, which is also its kv head within the CTA; the producer loads for all
  // (head 0's work).
  const int warpgroup = T::kWarpgroups == 1 || producer ? 0 : warp / T::kConsumerWarps;
  const WgmmaSmem<T> sm{(smem_addr(wgmma_smem) + 1023u) & ~1023u, warpgroup};
  const CtaWork w = cta_work<T>(p.base, warpgroup);
#ifdef TILEPATH_KERNEL_TRACE
  if (warp == kConsumers) {
    TP_START_WHEN(0, p.base.args.page_table != nullptr);
    TP_START_WHEN(1, first_page.page != -1);
    TP_START_WHEN(2, w.end != -1);
  }
#endif
  const int tiles = w.end > w.begin ? (w.end - w.begin + T::kTileTokens - 1) / T::kTileTokens : 0;
  if constexpr (!wgmma_loads_ring<T>()) wgmma_zero_tile_memory<T>(sm.base);
  if (threadIdx.x < T::kStages) {
    // TMA: the producer's arrive + the bytes; cp.async: each producer lane's copies landed
    mbarrier_init(sm.full_bar(threadIdx.x), T::kCpAsyncRing ? 32 * T::kProducerWarps : 1);
    mbarrier_init(sm.empty_bar(threadIdx.x), WgmmaSmem<T>::kEmptyArrivals);
  }
  fence_mbarrier_init();
  __syncthreads();
#ifdef TILEPATH_KERNEL_TRACE
  if (warp == kConsumers) TP_START_WHEN(3, true);
#endif
  if (producer) {
    if constexpr (wgmma_loads_ring<T>()) {
      if constexpr (T::kCpAsyncRing) {
        wgmma_producer_cp_async<T>(p, w, sm, tiles, warp - kConsumers, lane);
      } else {
        wgmma_producer<T>(p, w, sm, tiles, first_page, lane);
      }
    }
  } else {
    wgmma_consumer<T>(p, w, sm, tiles, T::kWarpgroups == 1 ? warp : warp % T::kConsumerWarps, lane);
  }
#ifdef TILEPATH_KERNEL_TRACE
  // The stamps as the mma.sync kernel's line has them (prolog = the producer's first request,
  // loop = last tile consumed, joined = the heads' denominators summed, end = output written).
  __syncthreads();
  if (threadIdx.x == 0) {
    WgmmaTraceRecord& r = p.trace[blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)];
    r.end = clock64() - c0;
    r.g9 = tp_gtime();
    r.g0 = g0;
    for (int i = 0; i < 8; ++i) r.stamps[i] = tp_trace[i] - c0;
    for (int i = 0; i < kTpStartSlots; ++i) r.start[i] = tp_start[i] - c0;
    for (int i = 0; i < kTpRingSlots; ++i) r.ring[i] = tp_ring[i];
    r.x = blockIdx.x, r.y = blockIdx.y, r.z = blockIdx.z, r.sm = int(tp_smid());
    r.tiles = tiles, r.load_only = int(T::kLoadOnly);
  }
#endif
}

}  // namespace tilepath::cuda::kernels
