// The split-KV policy (core/perf/cuda_kernel_plan.h, choose_splits): the grid fills the
// GPU's resident CTA slots at the kernel's own occupancy, whatever the batch x kv heads.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/perf/cuda_kernel_plan.h"

using namespace tilepath::perf::cuda_plan;

namespace {
constexpr int kH200Sms = 132;
constexpr int kSplitsCap = 128, kMinTokens = 256;
constexpr MmaFamily kMmaSync = MmaFamily::mma_sync, kWgmma = MmaFamily::wgmma;
}  // namespace

TEST(SplitPolicy, AGridUnderOneWaveSplitsUntilTheSlotsAreFull) {
  for (int ctas_per_sm : {1, 2, 4, 6, 8})
    for (long long streams : {1LL, 8LL, 16LL, 32LL, 64LL, 128LL, 256LL, 512LL}) {
      const long long slots = static_cast<long long>(kH200Sms) * std::min(ctas_per_sm, 4);
      if (streams >= slots) continue;
      const int s = choose_splits(streams, 65536, kH200Sms, ctas_per_sm, kMmaSync);
      SCOPED_TRACE("streams " + std::to_string(streams) + ", " + std::to_string(ctas_per_sm) + " CTAs/SM");
      // One wave, and one split more would not fit in it or would not shorten the splits (or
      // the most splits there may be).
      EXPECT_LE(streams * s, slots);
      if (s < kSplitsCap && streams * (s + 1) <= slots) {
        EXPECT_EQ(split_tokens_for(65536, s + 1), split_tokens_for(65536, s));
      }
    }
}

TEST(SplitPolicy, TheKernelsOccupancySetsHowManySplitsFillTheGpu) {
  // B = 16 x 8 kv heads at 32k tokens: 4 CTAs per SM take 4 splits (512 of 528 slots),
  // a kernel that fits 2 per SM only 2 (256 of 264): a second wave would cost a whole split.
  EXPECT_EQ(choose_splits(128, 32768, kH200Sms, 4, kMmaSync), 4);
  EXPECT_EQ(choose_splits(128, 32768, kH200Sms, 2, kMmaSync), 2);
  EXPECT_EQ(choose_splits(128, 32768, kH200Sms, 1, kMmaSync), 1);
  // Past 4 per SM the grid is not split further: 4 streams per SM already bring what HBM delivers.
  EXPECT_EQ(choose_splits(128, 32768, kH200Sms, 8, kMmaSync), 4);
  EXPECT_EQ(choose_splits(512, 4096, kH200Sms, 8, kMmaSync), 1);
}

TEST(SplitPolicy, WgmmaKernelsFillTwoCtasPerSm) {
  // The wgmma kernels at D = 128 fit 4 per SM and fill 2: Hq/Hk 32/8 at B = 1 fills its 264
  // slots with 33 splits of 1024 tokens, of which 32 hold the 32768 (mma.sync: 66 of 512, 64);
  // 8/1 at B = 32, 8 where mma.sync takes 16.
  const int wgmma_d128 = ctas_per_sm_for(wgmma_smem_bytes(128, 1, 1, true), kWgmmaThreads);
  ASSERT_EQ(wgmma_d128, 4);
  EXPECT_EQ(choose_splits(8, 32768, kH200Sms, wgmma_d128, kWgmma), 32);
  EXPECT_EQ(choose_splits(8, 32768, kH200Sms, 4, kMmaSync), 64);
  EXPECT_EQ(choose_splits(32, 32768, kH200Sms, wgmma_d128, kWgmma), 8);
  EXPECT_EQ(choose_splits(32, 32768, kH200Sms, 4, kMmaSync), 16);
  // A wgmma kernel that fits fewer than 2 per SM fills its own occupancy: 1 per SM, 32 streams, 4 splits.
  EXPECT_EQ(choose_splits(32, 32768, kH200Sms, 1, kWgmma), 4);
  // The splits' length and count limits hold for both families.
  EXPECT_EQ(choose_splits(1, 32768, kH200Sms, wgmma_d128, kWgmma), kSplitsCap);
  EXPECT_EQ(choose_splits(512, 4096, kH200Sms, wgmma_d128, kWgmma), 1);
}

// K8/V8 wgmma at D = 64 reads two kv heads per CTA, split or not; nowhere else.
TEST(SplitPolicy, WgmmaK8V8AtD64TakesTwoKvHeadsPerCta) {
  EXPECT_EQ(wgmma_kv_heads_per_cta_for(true, 64, 8), 2);
  EXPECT_EQ(wgmma_kv_heads_per_cta_for(true, 64, 2), 2);    // one pair
  EXPECT_EQ(wgmma_kv_heads_per_cta_for(true, 128, 8), 1);   // D = 128
  EXPECT_EQ(wgmma_kv_heads_per_cta_for(true, 128, 32), 1);  // Hq/Hk 32/32
  EXPECT_EQ(wgmma_kv_heads_per_cta_for(false, 64, 8), 1);   // 16-bit caches: no two-head kernel
  EXPECT_EQ(wgmma_kv_heads_per_cta_for(true, 64, 1), 1);    // one kv head
  EXPECT_EQ(wgmma_kv_heads_per_cta_for(true, 64, 3), 1);    // an odd count
}

TEST(SplitPolicy, AWaveOrMoreStaysUnsplit) {
  EXPECT_EQ(choose_splits(512, 4096, kH200Sms, 4, kMmaSync), 1);    // B = 64 x 8: 512 of 528 slots
  EXPECT_EQ(choose_splits(600, 65536, kH200Sms, 4, kMmaSync), 1);   // a little over a wave
  EXPECT_EQ(choose_splits(1024, 65536, kH200Sms, 4, kMmaSync), 1);  // B = 128 x 8: two even waves
  EXPECT_EQ(choose_splits(2048, 65536, kH200Sms, 4, kMmaSync), 1);  // B = 64 x 32 kv heads
  EXPECT_EQ(choose_splits(200, 65536, kH200Sms, 1, kMmaSync), 1);   // separate_kv: one CTA per SM
}

// The policy launches the splits that fill the slots less those past the context: every split
// holds tokens, and each is as long as with the filling count, so no stream's work moves.
TEST(SplitPolicy, EverySplitHoldsTokensAndKeepsTheFillingLength) {
  for (MmaFamily family : {kMmaSync, kWgmma})
    for (int ctas_per_sm : {1, 2, 4})
      for (long long streams : {1LL, 2LL, 8LL, 16LL, 32LL, 64LL, 128LL, 512LL})
        for (int len : {1, 31, 255, 256, 1000, 1024, 4096, 16384, 32768, 32769, 65536, 100000}) {
          const int s = choose_splits(streams, len, kH200Sms, ctas_per_sm, family);
          SCOPED_TRACE("streams " + std::to_string(streams) + ", " + std::to_string(ctas_per_sm) + " CTAs/SM, " +
                       std::to_string(len) + " tokens");
          const int t = split_tokens_for(len, s);
          EXPECT_GE(s * t, len);        // the splits cover the context
          EXPECT_LT((s - 1) * t, len);  // and the last of them starts inside it
          const long long slots = static_cast<long long>(kH200Sms) * std::min(ctas_per_sm, family == kWgmma ? 2 : 4);
          const long long filling = std::max(1LL, std::min({slots / streams, static_cast<long long>(kSplitsCap),
                                                            std::max(1LL, static_cast<long long>(len / kMinTokens))}));
          EXPECT_EQ(t, split_tokens_for(len, static_cast<int>(filling)));
        }
  // The shapes of the bundled database that had an empty split: B = 1, Hq/Hk 32/8.
  EXPECT_EQ(choose_splits(8, 65536, kH200Sms, 4, kMmaSync), 64);  // 66 of 1024 tokens
  EXPECT_EQ(choose_splits(8, 16384, kH200Sms, 4, kWgmma), 32);    // 33 of 512 tokens
  EXPECT_EQ(choose_splits(8, 65536, kH200Sms, 4, kWgmma), 33);    // 33 of 2016: the last holds 1024
}

TEST(SplitPolicy, SplitsKeepTheirMinimumLengthAndCap) {
  for (int len : {1, 255, 256, 1024, 4096, 65536}) {
    const int s = choose_splits(1, len, kH200Sms, 4, kMmaSync);
    EXPECT_GE(s, 1);
    EXPECT_LE(s, kSplitsCap);
    if (s > 1) {
      EXPECT_GE(len / s, kMinTokens - 1) << len;
    }
  }
  EXPECT_EQ(choose_splits(1, 32768, kH200Sms, 4, kMmaSync), kSplitsCap);  // B = 1, one kv head
  EXPECT_EQ(choose_splits(0, 32768, kH200Sms, 4, kMmaSync), 1);
  EXPECT_EQ(choose_splits(8, 32768, 0, 4, kMmaSync), 1);
}

TEST(SplitPolicy, RegistersLimitCtasPerSmByWholeWarpsPerPartition) {
  // The D = 64 mma.sync kernels (2 warps, 24 KB): shared memory allows 9 CTAs; at 108 registers
  // a 16K-register partition holds 4 warps (3584 registers each), 16 per SM: 8 CTAs, as the
  // H200's runtime reported (occupancy 0.25); at 88 registers 5 warps per partition: 9.
  EXPECT_EQ(ctas_per_sm_for(24576, 64), 9);
  EXPECT_EQ(ctas_per_sm_for(24576, 64, 108), 8);
  EXPECT_EQ(ctas_per_sm_for(24576, 64, 88), 9);
  EXPECT_EQ(ctas_per_sm_for(49152, 32, 255), 4);  // D = 256, one warp: shared memory binds
}

TEST(SplitPolicy, CtasPerSmAreTheSharedMemoryAndThreadLimits) {
  EXPECT_EQ(ctas_per_sm_for(49152, 64), 4);  // the K8/V8 ring at D = 128: 48 KB + 1 KB reserved
  EXPECT_EQ(ctas_per_sm_for(98304, 128), 2);
  EXPECT_EQ(ctas_per_sm_for(229504, 256), 1);
  EXPECT_EQ(ctas_per_sm_for(1024, 1024), 2);  // threads
  EXPECT_EQ(ctas_per_sm_for(0, 32), 32);      // the SM's block limit
  EXPECT_EQ(ctas_per_sm_for(wgmma_smem_bytes(128, 1, 1, true), kWgmmaThreads), 4);
  EXPECT_EQ(ctas_per_sm_for(wgmma_smem_bytes(64, 1, 1, true), kWgmmaThreads), 6);
  EXPECT_EQ(ctas_per_sm_for(wgmma_smem_bytes(256, 1, 1, false), kWgmmaThreads), 2);
  // BF16 K and V tiles take twice the ring: K16/V16 fits 2 per SM at D = 128 and 1 at 256,
  // K16/V8 2 at D = 128.
  EXPECT_EQ(ctas_per_sm_for(wgmma_smem_bytes(128, 2, 2, false), kWgmmaThreads), 2);
  EXPECT_EQ(ctas_per_sm_for(wgmma_smem_bytes(256, 2, 2, false), kWgmmaThreads), 1);
  EXPECT_EQ(ctas_per_sm_for(wgmma_smem_bytes(128, 2, 1, false), kWgmmaThreads), 2);
  // At D = 64 a BF16 slot is as large as an E4M3 one at D = 128: 3 slots, so 4 CTAs fit, as
  // at 128 (4 slots: 3 per SM and a second wave at B = 64, Hk = 8); K16/V8 keeps 4 slots.
  EXPECT_EQ(wgmma_stages(wgmma_stage_bytes(64, 2, 2)), 3);
  EXPECT_EQ(wgmma_stages(wgmma_stage_bytes(128, 1, 1)), 3);
  EXPECT_EQ(wgmma_stages(wgmma_stage_bytes(64, 2, 1)), 4);
  EXPECT_EQ(wgmma_stages(wgmma_stage_bytes(64, 1, 1)), 4);
  // Two kv heads per CTA (a warpgroup each, both heads' tiles in a slot): half the CTAs per SM
  // of the one-head kernel at D = 128, so the same bytes in flight per SM; 4 at D = 64.
  EXPECT_EQ(kWgmmaThreads, wgmma_threads(1));
  EXPECT_EQ(ctas_per_sm_for(wgmma_smem_bytes(128, 1, 1, true, 2), wgmma_threads(2)), 2);
  EXPECT_EQ(ctas_per_sm_for(wgmma_smem_bytes(64, 1, 1, true, 2), wgmma_threads(2)), 4);
  EXPECT_EQ(ctas_per_sm_for(wgmma_smem_bytes(64, 2, 2, false), kWgmmaThreads), 4);
  EXPECT_EQ(ctas_per_sm_for(wgmma_smem_bytes(64, 2, 1, false), kWgmmaThreads), 4);
}

// Pages the TMA boxes do not tile take the cp.async ring, whose one-head CTAs have a second
// producer warp (K and V each gathered by a warp of their own): the same CTAs per SM as the
// TMA kernel's, which holds only while ptxas keeps their registers to 80 (the kernels'
// launch bounds ask for the plan's CTAs per SM).
TEST(SplitPolicy, TheCpAsyncRingsOneHeadCtasHaveTwoProducerWarpsAtTheSameOccupancy) {
  for (int page : {8, 16, 32, 64, 256}) EXPECT_TRUE(wgmma_tma_tiles_pages(page)) << page;
  for (int page : {1, 2, 4, 12, 48}) EXPECT_FALSE(wgmma_tma_tiles_pages(page)) << page;
  EXPECT_EQ(wgmma_producer_warps(false, 1), 1);
  EXPECT_EQ(wgmma_producer_warps(false, 2), 1);
  EXPECT_EQ(wgmma_producer_warps(true, 1), 2);
  EXPECT_EQ(wgmma_producer_warps(true, 2), 1);
  const int cp_async_threads = wgmma_threads(1, wgmma_producer_warps(true, 1));
  EXPECT_EQ(cp_async_threads, 192);
  EXPECT_EQ(wgmma_threads(2, wgmma_producer_warps(true, 2)), wgmma_threads(2));
  const int smem = wgmma_smem_bytes(128, 1, 1, true);
  EXPECT_EQ(ctas_per_sm_for(smem, cp_async_threads), ctas_per_sm_for(smem, kWgmmaThreads));
  EXPECT_EQ(ctas_per_sm_for(smem, cp_async_threads, 80), 4);
  EXPECT_EQ(ctas_per_sm_for(smem, cp_async_threads, 81), 3);  // a warp's registers come in units of 256
}

// K8/V8 wgmma grids of more than one wave start pairs of adjacent kv heads together; one
// wave, an odd number of kv-head CTAs and the 16-bit caches do not.
TEST(SplitPolicy, K8V8WgmmaGridsOfMoreThanOneWaveClusterPairsOfKvHeads) {
  // K8/V8 at D = 128: 4 CTAs per SM.
  const long long slots = 4LL * kH200Sms;
  EXPECT_EQ(wgmma_cluster_kv_heads(true, 128LL * 8, slots, 8), 2);  // B = 128, 32/8: two waves
  EXPECT_EQ(wgmma_cluster_kv_heads(true, 64LL * 8, slots, 8), 1);   // B = 64: 512 of 528 slots
  EXPECT_EQ(wgmma_cluster_kv_heads(true, slots, slots, 8), 1);      // exactly one wave
  EXPECT_EQ(wgmma_cluster_kv_heads(true, slots + 1, slots, 8), 2);
  EXPECT_EQ(wgmma_cluster_kv_heads(true, 1024LL * 3, slots, 3), 1);  // no pairs in 3 kv heads
  EXPECT_EQ(wgmma_cluster_kv_heads(true, 1024LL, 0, 8), 1);          // no slots known: no cluster
  EXPECT_EQ(wgmma_cluster_kv_heads(false, 128LL * 8, slots, 8), 1);  // a 16-bit cache: none
}
