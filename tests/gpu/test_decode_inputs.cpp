// Host side of the CUDA inputs: the tiled (pool) cache and the one-row
// reference problems must describe exactly the problem the device sees.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "backends/cuda/decode_inputs.h"

using namespace tilepath;
using namespace tilepath::cuda;

namespace {

OperatingPoint small_op(KvDtype kv, KPath path, TransformMode mode) {
  OperatingPoint op;
  op.batch = 3;
  op.context_lengths = {1, 37, 300};
  op.context = 300;
  op.q_heads = 8;
  op.kv_heads = 2;
  op.head_dim = 64;
  op.page_size = 16;
  op.kv = kv;
  op.k_path = path;
  op.mode = mode;
  return op;
}

// The device-visible problem of a tiled case, expanded on the host.
numerics::DecodeProblem expand(const HostDecodeCase& c) {
  numerics::DecodeProblem full = c.source;
  full.op = c.op;
  full.num_pages = c.num_pages;
  full.max_pages_per_seq = c.max_pages_per_seq;
  full.page_table = c.page_table;
  full.lengths = c.lengths;
  const std::size_t page = std::size_t(c.op.page_size) * c.op.kv_heads * c.op.head_dim;
  const auto expand_pages = [&](const auto& pool, auto& dst) {
    if (pool.empty()) return;
    dst.resize(page * c.num_pages);
    for (int j = 0; j < c.num_pages; ++j)
      std::copy_n(pool.begin() + (j % c.source.num_pages) * page, page, dst.begin() + j * page);
  };
  expand_pages(c.source.k16, full.k16);
  expand_pages(c.source.v16, full.v16);
  expand_pages(c.source.k8, full.k8);
  expand_pages(c.source.v8, full.v8);
  const std::size_t row = std::size_t(c.op.q_heads) * c.op.head_dim;
  full.q.resize(row * c.op.batch);
  for (int b = 0; b < c.op.batch; ++b)
    std::copy_n(c.source.q.begin() + (b % c.source.op.batch) * row, row, full.q.begin() + b * row);
  return full;
}

void expect_row_references_match(const HostDecodeCase& c, const numerics::DecodeProblem& device_problem) {
  const auto ref = numerics::reference_decode(device_problem);
  const int group = c.op.q_heads / c.op.kv_heads;
  for (int b = 0; b < c.op.batch; ++b) {
    for (int h = 0; h < c.op.kv_heads; ++h) {
      const auto row = numerics::reference_decode(reference_problem_for_row(c, b, h));
      ASSERT_EQ(row.size(), std::size_t(group) * c.op.head_dim);
      for (std::size_t i = 0; i < row.size(); ++i) {
        const std::size_t at = (std::size_t(b) * c.op.q_heads + std::size_t(h) * group) * c.op.head_dim + i;
        ASSERT_NEAR(row[i], ref[at], 1e-12 * (1 + std::abs(ref[at]))) << "b=" << b << " h=" << h << " i=" << i;
      }
    }
  }
}

}  // namespace

TEST(DecodeInputs, SmallCaseIsTheWholeProblem) {
  const auto op = small_op(KvDtype::k8v8, KPath::transform, TransformMode::full);
  const HostDecodeCase c = make_host_case(op, 7);
  EXPECT_FALSE(c.tiled);
  EXPECT_EQ(c.lengths, (std::vector<std::int32_t>{1, 37, 300}));
  EXPECT_EQ(c.num_pages, c.source.num_pages);
  expect_row_references_match(c, c.source);
}

TEST(DecodeInputs, TiledCaseUsesDistinctPagesAndItsRowReferencesMatchTheExpandedProblem) {
  for (KvDtype kv : {KvDtype::k16v16, KvDtype::k8v8}) {
    const auto op = small_op(kv, default_k_path(kv), default_mode(kv, default_k_path(kv)));
    // A tiny tiling threshold forces the pool path on a problem small enough to expand.
    const HostDecodeCase c = make_host_case(op, 11, true, /*tile_above_host_bytes=*/4096);
    ASSERT_TRUE(c.tiled);
    EXPECT_LT(c.source.num_pages, c.num_pages) << "the pool must be smaller than the cache";
    EXPECT_EQ(c.num_pages, 1 + 3 + 19);  // ceil(1/16) + ceil(37/16) + ceil(300/16)
    std::vector<int> used;
    for (int b = 0; b < op.batch; ++b)
      for (int i = 0; i < (c.lengths[b] + 15) / 16; ++i) used.push_back(c.page_table[b * c.max_pages_per_seq + i]);
    std::sort(used.begin(), used.end());
    EXPECT_EQ(std::adjacent_find(used.begin(), used.end()), used.end()) << "page ids must be distinct";
    EXPECT_EQ(used.front(), 0);
    EXPECT_EQ(used.back(), c.num_pages - 1);
    expect_row_references_match(c, expand(c));
  }
}

// A prebias cache stores K_t - RoPE_t(b) and the kernel adds RoPE_t(b) at the device
// position: a tiled token must keep its pool position (else the gate would compare it with
// another position's key). Device page i of request b copies page i of pool request b mod P.
TEST(DecodeInputs, TiledPrebiasCaseKeepsEveryTokenAtItsPoolPosition) {
  OperatingPoint op = small_op(KvDtype::k8v8, KPath::transform, TransformMode::full);
  op.batch = 5;
  op.context_lengths = {300, 37, 1, 300, 200};
  op.k_repr = KRepr::prebias;
  const HostDecodeCase c =
      make_host_case(op, 11, true, /*tile_above_host_bytes=*/40000, numerics::KeyDistribution::qwen_bias);
  ASSERT_TRUE(c.tiled);
  const numerics::DecodeProblem& pool = c.source;
  EXPECT_EQ(pool.op.context, 300) << "pool requests are as long as the longest request";
  EXPECT_LT(pool.op.batch, op.batch);
  EXPECT_FALSE(pool.k_bias.empty());
  std::vector<int> used;
  for (int b = 0; b < op.batch; ++b) {
    for (int i = 0; i < (c.lengths[b] + 15) / 16; ++i) {
      const int id = c.page_table[b * c.max_pages_per_seq + i];
      used.push_back(id);
      EXPECT_EQ(id % pool.num_pages, pool.page_table[(b % pool.op.batch) * pool.max_pages_per_seq + i])
          << "request " << b << " page " << i;
    }
  }
  std::sort(used.begin(), used.end());
  EXPECT_EQ(std::adjacent_find(used.begin(), used.end()), used.end()) << "page ids must be distinct";
  EXPECT_LT(used.back(), c.num_pages);
  expect_row_references_match(c, expand(c));
}

TEST(DecodeInputs, AllowTilingFalseKeepsTheWholeProblem) {
  const auto op = small_op(KvDtype::k16v8, KPath::k16, TransformMode::full);
  const HostDecodeCase c = make_host_case(op, 3, /*allow_tiling=*/false, 4096);
  EXPECT_FALSE(c.tiled);
}
