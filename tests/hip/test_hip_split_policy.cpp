// The HIP backend's split-KV policy (backends/hip/decode_launch.h, choose_splits): enough
// workgroups to fill the CUs, every split holding tokens (needs no GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "backends/hip/decode_launch.h"

using namespace tilepath::hip;

namespace {
constexpr int kMi300xCus = 304;
}  // namespace

TEST(HipSplitPolicy, EverySplitHoldsTokensAndTheSplitsFillTheCus) {
  for (int workgroups : {1, 2, 8, 16, 32, 64, 128, 304, 512})
    for (int len : {1, 31, 32, 511, 512, 1000, 4096, 16384, 32768, 32769, 65536}) {
      const int s = choose_splits(workgroups, 1, 1, len, kMi300xCus);
      SCOPED_TRACE(std::to_string(workgroups) + " workgroups, " + std::to_string(len) + " tokens");
      ASSERT_GE(s, 1);
      ASSERT_LE(s, 64);
      const int t = split_tokens_for(len, s);
      EXPECT_EQ(t % 32, 0);
      EXPECT_GE(s * t, len);        // the splits cover the context
      EXPECT_LT((s - 1) * t, len);  // and the last of them starts inside it
      // The count that fills the CUs (at most 64, 512 tokens each) splits as long: dropping the
      // empty splits moves no tokens.
      if (workgroups < kMi300xCus) {
        const int filling =
            std::max(1, std::min({(kMi300xCus + workgroups - 1) / workgroups, std::max(1, len / 512), 64}));
        EXPECT_EQ(t, split_tokens_for(len, filling));
      } else {
        EXPECT_EQ(s, 1);
      }
    }
}

TEST(HipSplitPolicy, DropsTheEmptyLastSplit) {
  // B = 1, 8 kv heads on 304 CUs: 38 splits fill them. At 24576 tokens a split is 672 long and
  // 37 cover the context; at 32768, 864 long, and all 38 hold tokens; at 16384 the 512-token
  // minimum allows 32.
  EXPECT_EQ(choose_splits(1, 8, 1, 24576, kMi300xCus), 37);
  EXPECT_EQ(choose_splits(1, 8, 1, 32768, kMi300xCus), 38);
  EXPECT_EQ(choose_splits(1, 8, 1, 16384, kMi300xCus), 32);
  EXPECT_EQ(choose_splits(1, 8, 1, 0, kMi300xCus), 1);
  EXPECT_EQ(choose_splits(64, 8, 1, 4096, kMi300xCus), 1);  // a wave or more stays unsplit
}
