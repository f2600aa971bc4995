#pragma once
// The one-kv-head wgmma kernel (decode_wgmma.cuh) with tiles handed out at run time, so that a
// CTA whose stream runs out reads tiles of streams that still have some: SMs read at different
// rates (by GPC), and with one fixed stream per CTA the fast ones idle at the end
// (docs/perf-notes.md, "Load balance and the B=64 tail").
//
// A stream is what one CTA of the plain kernel reads: (split, kv head, head chunk, request).
// Every CTA starts on its own stream (the owner) and takes its first kStages tiles (owner_block)
// without asking; every later tile is claimed from the stream's word in global memory (one atomic add
// per tile, a tile ahead of its copy). A CTA whose stream has run out, among the grid's last
// wave of CTAs, registers on another started stream that has at least `min_remaining` tiles
// unclaimed (a compare-and-swap) and claims tiles of it as its owner does. Each CTA that read
// tiles of a stream (a participant) keeps its own softmax state over them; at the stream's end
// each writes its normalized rows and log-sum-exp, and the last to finish merges them and
// stores the stream's result as the plain kernel would (the output, or the split's partial).
// A stream that nobody stole from stores its result straight away.
//
// The producer tells the consumers what each ring slot holds in a small descriptor beside the
// ring (the slot's tile, or a marker: the end of a stream with its participants, or the end of
// the CTA's work). The words and counters are left at zero by every launch that completes, so
// the workspace is zeroed once, when it is allocated.

#include <cstdint>

#include "backends/cuda/kernels/decode_wgmma.cuh"

namespace tilepath::cuda::kernels {

// Participants of one stream at most: its owner and three thieves.
inline constexpr int kStealMaxParticipants = 4;

// The workspace of stealing (launch_wgmma_steal sizes and zeroes it).
struct StealArgs {
  // Per stream: bits 0-23 tiles handed out after the owner's first block (the next claim gets
  // tile owner_block + that count), bits 24-31 thieves registered, bits 32-63 the stream's tiles
  // (set by the owner's first add; 0: the owner has not started, nothing to steal).
  unsigned long long* claims;
  unsigned int* done;  // per stream: participants that have stored their rows
  float* partial_out;  // [stream][participant][kHeadsPerCta][D]: normalized rows
  float* partial_lse;  // [stream][participant][kHeadsPerCta]: log2-domain log-sum-exp
  int first_thief;     // CTAs (linear block index) from here on steal: the grid's last wave
  int min_remaining;   // a stream is stolen from while at least this many of its tiles are unclaimed
  int owner_block;     // the tiles an owner takes without claims (a ring's depth; more: no claims)
};

struct WgmmaStealParams {
  WgmmaParams w;
  StealArgs steal;
};

// A claim word's fields.
struct StealWord {
  unsigned long long v;
  __device__ int tiles() const { return static_cast<int>(v >> 32); }
  __device__ int thieves() const { return static_cast<int>((v >> 24) & 0xFFu); }
  __device__ int handed() const { return static_cast<int>(v & 0xFFFFFFu); }
};
inline constexpr unsigned long long kStealThief = 1ull << 24;

// What a ring slot holds (the producer's descriptor of it).
enum StealSlot : int { kStealTile = 0, kStealStreamEnd = 1, kStealDone = 2 };
struct StealDesc {
  int kind, stream, tile, participants_and_index;  // for kStealStreamEnd: participants << 8 | index
};

// The one-head wgmma kernel's layout plus the ring's descriptors and the consumers' flag.
template <KOperand KO, VOperand VO, int kD>
struct WgmmaStealTraits : WgmmaTraits<KO, VO, kD> {
  using Base = WgmmaTraits<KO, VO, kD>;
  static constexpr int kDescOffset = (Base::kUsedBytes + 15) / 16 * 16;
  static constexpr int kFlagOffset = kDescOffset + Base::kStages * 16;
  static constexpr int kSmemBytes = kFlagOffset + 16 + 1024;  // room to align the dynamic base to 1024
};

// The plain kernel's CtaWork of stream s (the linear block index of the CTA that owns it).
template <class T>
__device__ __forceinline__ CtaWork stream_work(const KernelParams& p, int s) {
  const DecodeArgs& a = p.args;
  const int x = s % gridDim.x, y = s / gridDim.x % gridDim.y, z = s / (gridDim.x * gridDim.y);
  CtaWork w;
  w.split = x;
  w.kv_head = y / p.head_chunks;
  const int chunk = y % p.head_chunks;
  w.batch = z;
  const int group = a.q_heads / a.kv_heads;
  w.head0 = w.kv_head * group + chunk * kHeadsPerCta;
  w.heads = min(kHeadsPerCta, group - chunk * kHeadsPerCta);
  w.begin = w.split * a.split_tokens;
  const int len = a.lengths[w.batch];
  w.end = max(w.begin, min(len, w.begin + a.split_tokens));
  w.v_scale = a.v_scale ? a.v_scale[a.scale_per_head ? w.kv_head : 0] : 1.0f;
  return w;
}

template <class T>
__device__ __forceinline__ int stream_tiles(const CtaWork& w) {
  return (w.end - w.begin + T::kTileTokens - 1) / T::kTileTokens;
}

__device__ __forceinline__ unsigned long long load_relaxed(const unsigned long long* at) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];\n" : "=l"(v) : "l"(at));
  return v;
}

// ============================================================================
// producer: claims, k_load, v_load
// ============================================================================

template <class T>
struct StealProducer {
  const WgmmaStealParams& p;
  const WgmmaSmem<T>& sm;
  int lane;
  int pos = 0;  // ring position: slot pos % kStages, phase pos / kStages

  __device__ std::uint32_t desc_at(int slot) const { return sm.base + T::kDescOffset + slot * 16; }

  // Waits for the next slot to be free and writes its descriptor (lane 0).
  __device__ int take_slot(StealDesc d) {
    const int slot = pos % T::kStages;
    if (pos >= T::kStages) mbarrier_wait(sm.empty_bar(slot), ((pos / T::kStages) - 1) & 1);
    if (lane == 0) {
      asm volatile("st.shared.v4.s32 [%0], {%1, %2, %3, %4};\n" ::"r"(desc_at(slot)), "r"(d.kind), "r"(d.stream),
                   "r"(d.tile), "r"(d.participants_and_index)
                   : "memory");
    }
    ++pos;
    return slot;
  }

  // A marker: the slot completes on the producer's arrive alone, with no bytes.
  __device__ void mark(StealDesc d) {
    const int slot = take_slot(d);
    if (lane == 0) mbarrier_arrive(sm.full_bar(slot));
    __syncwarp();
  }

  // Tile `tile` of stream s (work w) into the next slot; page: the lane's box page of it.
  __device__ void load(int s, const CtaWork& w, int tile, BoxPage page) {
    using KTile = typename T::KTile;
    using VTile = typename T::VTile;
    const int slot = take_slot(StealDesc{kStealTile, s, tile, 0});
    if (lane == 0) mbarrier_arrive_expect_tx(sm.full_bar(slot), T::kStageBytes);
    __syncwarp();
    const ProducerLane<T> pl(lane, wgmma_box_tokens(p.w.base.args.page_size));
    if (pl.issues) {
      const int byte0 = pl.block * 128;
      if (pl.block < KTile::kBlocks)  // k_load
        tma_load_4d(sm.k_tile(slot, 0) + KTile::offset(pl.piece * wgmma_box_tokens(p.w.base.args.page_size), byte0),
                    &p.w.k_map, byte0, w.kv_head, page.slot_in_page, page.page, sm.full_bar(slot));
      if (pl.block < VTile::kBlocks)  // v_load
        tma_load_4d(sm.v_tile(slot, 0) + VTile::offset(pl.piece * wgmma_box_tokens(p.w.base.args.page_size), byte0),
                    &p.w.v_map, byte0, w.kv_head, page.slot_in_page, page.page, sm.full_bar(slot));
    }
  }

  __device__ BoxPage box_page(const CtaWork& w, int tile) const {
    const DecodeArgs& a = p.w.base.args;
    const int box_tokens = wgmma_box_tokens(a.page_size);
    const ProducerLane<T> pl(lane, box_tokens);
    BoxPage b;
    if (pl.issues) b.page = wgmma_box_page(a, w.batch, w.begin, tile, pl.piece, box_tokens, &b.slot_in_page);
    return b;
  }

  // A stream to steal from: the started stream with the most tiles unclaimed (at least
  // min_remaining) and room for a thief, registered on with a compare-and-swap. Returns its
  // index (-1: none), its first tile and this CTA's participant index in it.
  __device__ int steal(int own, int* tile, int* index) const {
    constexpr int kScanLoads = 8;
    const StealArgs& st = p.steal;
    const int streams = gridDim.x * gridDim.y * gridDim.z;
    for (;;) {
      int best = -1, best_remaining = st.min_remaining - 1;
      for (int i0 = lane; i0 < streams; i0 += 32 * kScanLoads) {
        StealWord w[kScanLoads];  // the loads of a batch in flight together
#pragma unroll
        for (int k = 0; k < kScanLoads; ++k) {
          const int i = i0 + 32 * k;
          w[k].v = i < streams ? load_relaxed(st.claims + (own + 1 + i) % streams) : 0ull;
        }
#pragma unroll
        for (int k = 0; k < kScanLoads; ++k) {
          const int remaining = w[k].tiles() - st.owner_block - w[k].handed();
          if (w[k].tiles() > 0 && w[k].thieves() + 1 < kStealMaxParticipants && remaining > best_remaining)
            best = (own + 1 + i0 + 32 * k) % streams, best_remaining = remaining;  // from its own place on
        }
      }
#pragma unroll
      for (int mask = 16; mask > 0; mask >>= 1) {
        const int other = __shfl_xor_sync(0xffffffffu, best_remaining, mask);
        const int other_s = __shfl_xor_sync(0xffffffffu, best, mask);
        if (other > best_remaining || (other == best_remaining && other_s >= 0 && (best < 0 || other_s < best)))
          best_remaining = other, best = other_s;
      }
      if (best < 0) return -1;
      int got = 0;
      if (lane == 0) {
        StealWord w{load_relaxed(st.claims + best)};
        while (w.tiles() > 0 && w.thieves() + 1 < kStealMaxParticipants &&
               w.tiles() - st.owner_block - w.handed() >= st.min_remaining) {
          const unsigned long long old = atomicCAS(st.claims + best, w.v, w.v + kStealThief + 1);
          if (old == w.v) {
            got = 1;
            *tile = st.owner_block + w.handed();
            *index = w.thieves() + 1;
            break;
          }
          w.v = old;
        }
      }
      if (__shfl_sync(0xffffffffu, got, 0)) {
        *tile = __shfl_sync(0xffffffffu, *tile, 0);
        *index = __shfl_sync(0xffffffffu, *index, 0);
        return best;
      }
    }
  }

  // The request for this CTA's tile of stream s after tile `last` (-1: none): the owner's
  // first block needs none; a claim's answer is read an iteration later (answer), so that its
  // round trip to L2 passes while a slot frees.
  struct Ask {
    bool claim;
    unsigned long long word;  // lane 0: the claim word before this claim's add
    int tile;                 // not a claim: the tile, or -1
  };
  __device__ Ask ask(int s, int index, int last, int tiles) const {
    Ask q{false, 0ull, -1};
    if (last < 0 || last + 1 >= tiles) return q;         // no tile after it
    if (index == 0 && last + 1 < p.steal.owner_block) {  // the owner's first block
      q.tile = last + 1;
      return q;
    }
    q.claim = true;
    if (lane == 0) q.word = atomicAdd(p.steal.claims + s, 1ull);
    return q;
  }
  // The tile a request got (-1: the stream had none left); a claim's word also says how many
  // CTAs share the stream, final once its last tile is claimed (no thief registers on a stream
  // with no tile left to claim).
  __device__ int answer(const Ask& q, int tiles, int* participants) const {
    if (!q.claim) return q.tile;
    const StealWord w{__shfl_sync(0xffffffffu, q.word, 0)};
    *participants = w.thieves() + 1;
    const int tile = p.steal.owner_block + w.handed();
    return tile < tiles ? tile : -1;
  }

  __device__ void run(int own, BoxPage first) {
    const StealArgs& st = p.steal;
    int s = own, index = 0;
    CtaWork w = stream_work<T>(p.w.base, s);
    int tiles = stream_tiles<T>(w);
    // The owner's first block, tiles 0 .. kStages - 1, needs no claim: no thief registers on a
    // stream before the owner's first add (the stream's tiles), and claims start after the block.
    if (lane == 0 && tiles > p.steal.owner_block)
      atomicAdd(st.claims + s, static_cast<unsigned long long>(tiles) << 32);
    int tile = tiles > 0 ? 0 : -1;
    BoxPage page = first;
    int participants = 1;
    for (;;) {
      // Two tiles ahead: `tile` with its page read, `next` with its page read in flight, and
      // the request for the one after that in flight.
      int next = answer(ask(s, index, tile, tiles), tiles, &participants);
      BoxPage next_page;
      if (next >= 0) next_page = box_page(w, next);
      Ask after = ask(s, index, next, tiles);
      while (tile >= 0) {
        load(s, w, tile, page);
        tile = next, page = next_page;
        next = answer(after, tiles, &participants);
        if (next >= 0) next_page = box_page(w, next);
        after = ask(s, index, next, tiles);
      }
      mark(StealDesc{kStealStreamEnd, s, 0, participants << 8 | index});
      if (static_cast<int>(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)) < st.first_thief) break;
      s = steal(own, &tile, &index);
      if (s < 0) break;
      w = stream_work<T>(p.w.base, s);
      tiles = stream_tiles<T>(w);
      participants = index + 1;  // those registered before it and itself
      page = box_page(w, tile);
    }
    mark(StealDesc{kStealDone, 0, 0, 0});
  }
};

// ============================================================================
// consumer: q_quant, qk, softmax, v_prep, pv, accum; the merge of a stolen stream
// ============================================================================

template <class T>
struct StealConsumer {
  const WgmmaStealParams& p;
  const WgmmaSmem<T>& sm;
  const int4* descs;  // the ring slots' descriptors
  int warp, lane, tid;
  float row_scale[2];
  float o[T::kMBlocks][4];  // the PV accumulators
  bool fresh;               // no tile of the stream yet: the accumulators start from zero
  WgmmaSoftmaxState st;

  // q_quant (or Q's 16-bit tile) of stream w, and a fresh softmax state.
  __device__ void begin(const CtaWork& w) {
    const DecodeArgs& a = p.w.base.args;
    if constexpr (T::kQFp8) {
      wgmma_q_quant<T>(p.w.base, w, sm, tid);
    } else if constexpr (T::kK == KOperand::bf16) {
      wgmma_q_to_bf16<T>(p.w.base, w, sm, tid);
    } else {
      wgmma_q_to_f16<T>(p.w.base, w, sm, tid);
    }
    fence_proxy_async_shared();  // Qᵀ is read by wgmma
    sm.consumer_barrier();
    const int t = lane % 4;
    const float k_scale = T::kK == KOperand::bf16 ? 1.0f : a.k_scale[a.scale_per_head ? w.kv_head : 0];
#pragma unroll
    for (int h = 0; h < 2; ++h)
      row_scale[h] = a.softmax_scale * kLog2e * k_scale * lds_f32(sm.q_scales() + (2 * t + h) * 4);
    fresh = true;
    st = WgmmaSoftmaxState{{-INFINITY, -INFINITY}, {0.0f, 0.0f}};
  }

  // qk -> softmax -> v_prep -> pv -> accum of the tile in `slot` (valid tokens of 64).
  __device__ void tile(int slot, int valid) {
    if (valid < T::kTileTokens) zero_v_tail<T>(sm, slot, valid, tid);
    float s[4] = {};
    wgmma_qk<T>(s, sm.k_tile(slot), sm.k_column(), sm.q_tile(), warp, lane);
    float alpha[2];
    wgmma_softmax<T>(s, row_scale, valid, warp, lane, sm, st, alpha);
    VFragment v[T::kMBlocks][2];
    wgmma_v_prep<T>(sm.v_tile(slot), sm.v_column(), warp, lane, v);
    __syncwarp();
    if (lane == 0) mbarrier_arrive(sm.empty_bar(slot));
      // accum: O = O·alpha, or 0 at a stream's first tile. Selected here, where every thread
      // passes, not zeroed when the stream begins: accumulators set on that (to ptxas divergent)
      // path make it serialize every wgmma of the kernel (C7520).
#pragma unroll
    for (int mb = 0; mb < T::kMBlocks; ++mb) {
#pragma unroll
      for (int i = 0; i < 4; ++i) o[mb][i] = fresh ? 0.0f : o[mb][i] * alpha[i & 1];
    }
    fresh = false;
    fence_proxy_async_shared();
    sm.consumer_barrier();
    wgmma_pv<T>(o, v, sm.p_tile());
  }

  __device__ std::size_t piece_row(int s, int participant, int head) const {
    return (static_cast<std::size_t>(s) * kStealMaxParticipants + participant) * kHeadsPerCta + head;
  }

  // The end of stream s (work w) for this participant of `participants`: its rows stored for
  // the merge, or (alone, or the last to finish) the stream's result stored.
  __device__ void end(int s, const CtaWork& w, int participants, int index) {
    const StealArgs& sa = p.steal;
    const int t = lane % 4, g = lane / 4;
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
    float lse[2], inv[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      l[h] = 0.0f;
#pragma unroll
      for (int u = 0; u < T::kConsumerWarps; ++u) l[h] += lds_f32(l_sum + (u * 8 + 2 * t + h) * 4);
      lse[h] = l[h] > 0.0f ? st.m[h] + __log2f(l[h]) : -INFINITY;
      inv[h] = l[h] > 0.0f ? __fdividef(1.0f, l[h]) : 0.0f;
    }
    // this participant's normalized rows: value (mb, i) is head 2t + (i & 1), d of row g + 8 (i >> 1)
    float val[T::kMBlocks][4];
#pragma unroll
    for (int mb = 0; mb < T::kMBlocks; ++mb) {
#pragma unroll
      for (int i = 0; i < 4; ++i) val[mb][i] = fresh ? 0.0f : o[mb][i] * inv[i & 1];
    }
    if (participants > 1) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const std::size_t row = piece_row(s, index, 2 * t + h);
#pragma unroll
        for (int mb = 0; mb < T::kMBlocks; ++mb) {
          const int d0 = wgmma_o_row_to_d<T>(4 * mb + warp, g, 0), d1 = wgmma_o_row_to_d<T>(4 * mb + warp, g, 1);
          __stcg(sa.partial_out + row * T::kHeadDim + d0, val[mb][h]);
          __stcg(sa.partial_out + row * T::kHeadDim + d1, val[mb][2 + h]);
        }
        if (warp == 0 && g == 0) __stcg(sa.partial_lse + row, lse[h]);
      }
      __threadfence();  // the rows before the count that tells the last participant they are there
      sm.consumer_barrier();
      const std::uint32_t flag = sm.base + T::kFlagOffset;
      if (tid == 0) {
        const unsigned int before = atomicAdd(sa.done + s, 1u);
        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(flag), "r"(before == unsigned(participants - 1) ? 1u : 0u)
                     : "memory");
      }
      sm.consumer_barrier();
      std::uint32_t last = 0;
      asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(last) : "r"(flag) : "memory");
      if (!last) return;
      __threadfence();
      // merge: O = Σ 2^(lse_i − M)·O_i / Σ 2^(lse_i − M) per head
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float lse_i[kStealMaxParticipants];
        float top = -INFINITY;
#pragma unroll
        for (int i = 0; i < kStealMaxParticipants; ++i) {
          lse_i[i] = i >= participants ? -INFINITY
                     : i == index      ? lse[h]
                                       : __ldcg(sa.partial_lse + piece_row(s, i, 2 * t + h));
          top = fmaxf(top, lse_i[i]);
        }
        const float base = top == -INFINITY ? 0.0f : top;
        float total = 0.0f;
        float sum[T::kMBlocks][2] = {};
#pragma unroll
        for (int i = 0; i < kStealMaxParticipants; ++i) {
          if (i >= participants) break;
          const float weight = fast_exp2(lse_i[i] - base);
          total += weight;
          const std::size_t row = piece_row(s, i, 2 * t + h);
#pragma unroll
          for (int mb = 0; mb < T::kMBlocks; ++mb) {
            const int d0 = wgmma_o_row_to_d<T>(4 * mb + warp, g, 0), d1 = wgmma_o_row_to_d<T>(4 * mb + warp, g, 1);
            const float x0 = i == index ? val[mb][h] : __ldcg(sa.partial_out + row * T::kHeadDim + d0);
            const float x1 = i == index ? val[mb][2 + h] : __ldcg(sa.partial_out + row * T::kHeadDim + d1);
            sum[mb][0] += weight * x0;
            sum[mb][1] += weight * x1;
          }
        }
        const float norm = total > 0.0f ? __fdividef(1.0f, total) : 0.0f;
#pragma unroll
        for (int mb = 0; mb < T::kMBlocks; ++mb) val[mb][h] = sum[mb][0] * norm, val[mb][2 + h] = sum[mb][1] * norm;
        lse[h] = total > 0.0f ? base + __log2f(total) : -INFINITY;
      }
      if (tid == 0) sa.claims[s] = 0, sa.done[s] = 0;  // left at zero for the next launch
    } else if (tid == 0 && stream_tiles<T>(w) > p.steal.owner_block) {
      sa.claims[s] = 0;
    }
    store(w, val, lse);
  }

  // The stream's result as the plain kernel stores it: the output, or the split's partial.
  __device__ void store(const CtaWork& w, const float (&val)[T::kMBlocks][4], const float (&lse)[2]) const {
    const DecodeArgs& a = p.w.base.args;
    const int t = lane % 4, g = lane / 4;
    const float v_scale = T::kV == VOperand::bf16 ? 1.0f : w.v_scale;
    const float out_scale = v_scale / (T::kPFp8 ? kPFp8Scale : 1.0f);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int head = 2 * t + h;
      if (head >= w.heads) continue;
      const std::size_t row = static_cast<std::size_t>(w.batch) * a.q_heads + w.head0 + head;
      const std::size_t part = static_cast<std::size_t>(w.split) * a.batch * a.q_heads + row;
#pragma unroll
      for (int mb = 0; mb < T::kMBlocks; ++mb) {
        const int d0 = wgmma_o_row_to_d<T>(4 * mb + warp, g, 0), d1 = wgmma_o_row_to_d<T>(4 * mb + warp, g, 1);
        const float v0 = val[mb][h] * out_scale, v1 = val[mb][2 + h] * out_scale;
        if (a.splits == 1) {
          const std::uint32_t both = pack_bf16x2(v0, v1);
          if (d1 == d0 + 1) {
            *reinterpret_cast<std::uint32_t*>(a.out + row * T::kHeadDim + d0) = both;
          } else {
            a.out[row * T::kHeadDim + d0] = static_cast<std::uint16_t>(both & 0xFFFFu);
            a.out[row * T::kHeadDim + d1] = static_cast<std::uint16_t>(both >> 16);
          }
        } else {
          a.partial_out[part * T::kHeadDim + d0] = v0;
          a.partial_out[part * T::kHeadDim + d1] = v1;
        }
      }
      if (a.splits > 1 && warp == 0 && g == 0) a.partial_lse[part] = lse[h];
    }
  }

  // The slot of ring position pos once it has landed, and its descriptor.
  __device__ int wait_slot(int pos, StealDesc* d) const {
    const int slot = pos % T::kStages;
    mbarrier_wait(sm.full_bar(slot), (pos / T::kStages) & 1);
    // a plain load (not asm), so that the compiler sees the same value in every thread: the
    // tile loop's wgmma then run as in the plain kernel, not serialized (ptxas C7520)
    const int4 v = descs[slot];
    *d = StealDesc{v.x, v.y, v.z, v.w};
    return slot;
  }

  // One loop over the ring's tiles with its wgmma on every pass, as in the plain kernel; the
  // markers, and a stream's begin, on a path of their own where a pass starts (ptxas serializes
  // every wgmma of the kernel, C7520, where a wgmma sits in a branch or in a loop nested in
  // another, or where the accumulators are set on the markers' path).
  __device__ void run() {
    int pos = 0, s = -1;
    CtaWork w{};
    for (;;) {
      StealDesc d;
      int slot = wait_slot(pos, &d);
      while (d.kind != kStealTile || d.stream != s) {
        if (d.kind == kStealTile) {  // a stream's first tile here
          s = d.stream;
          w = stream_work<T>(p.w.base, s);
          begin(w);
          break;
        }
        __syncwarp();  // a marker is read: its slot is free
        if (lane == 0) mbarrier_arrive(sm.empty_bar(slot));
        if (d.kind == kStealDone) return;
        if (d.stream != s) {  // a stream with no tile (an empty split): the plain kernel's zeros
          s = d.stream;
          w = stream_work<T>(p.w.base, s);
          begin(w);
        }
        end(s, w, d.participants_and_index >> 8, d.participants_and_index & 0xFF);
        s = -1;
        slot = wait_slot(++pos, &d);
      }
      tile(slot, min(T::kTileTokens, w.end - (w.begin + T::kTileTokens * d.tile)));
      ++pos;
    }
  }
};

// ============================================================================
// The kernel
// ============================================================================

template <class T>
__global__ void __launch_bounds__(T::kThreads) decode_wgmma_steal_kernel(const __grid_constant__ WgmmaStealParams p) {
  static_assert(T::kKvHeadsPerCta == 1 && !T::kLoadOnly, "stealing is built for the one-kv-head kernel");
  extern __shared__ __align__(1024) char wgmma_smem[];
  grid_dependency_wait();
  grid_dependents_launch();
  constexpr int kConsumers = T::kConsumerWarps;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  BoxPage first_page;
  if (warp == kConsumers) first_page = wgmma_first_box_page<T>(p.w.base, lane);
  const WgmmaSmem<T> sm{(smem_addr(wgmma_smem) + 1023u) & ~1023u, 0};
  if (threadIdx.x < T::kStages) {
    mbarrier_init(sm.full_bar(threadIdx.x), 1);
    mbarrier_init(sm.empty_bar(threadIdx.x), T::kConsumerWarps);
  }
  fence_mbarrier_init();
  __syncthreads();
  const int own = static_cast<int>(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));
  if (warp == kConsumers) {
    StealProducer<T>{p, sm, lane}.run(own, first_page);
  } else {
    const int4* descs = reinterpret_cast<const int4*>(wgmma_smem + (sm.base - smem_addr(wgmma_smem)) + T::kDescOffset);
    StealConsumer<T> c{p, sm, descs, warp, lane, static_cast<int>(threadIdx.x)};
    c.run();
  }
}

}  // namespace tilepath::cuda::kernels
