// The kernel's fused q_quant (decode_kernel.cuh) against the host reference
// quantize_q_row_e4m3, bit for bit: the same E4M3 bytes and the same scale for every
// row. The kernel replaces the IEEE division x / scale by a reciprocal and one FMA
// correction; this test is what holds it to "correctly rounded".
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "backends/cuda/kernels/decode_kernel.cuh"
#include "core/numerics/decode_problem.h"
#include "core/numerics/fp8.h"
#include "cuda_test_support.h"

namespace {

using namespace tilepath::cuda;
using namespace tilepath::cuda::kernels;

template <int kD>
using Fp8QkTraits = DecodeTraits<KOperand::fp8_mma, VOperand::fp8_mma, false, kD, AblationKind::none, -1>;

// One warp per 8 rows, as in the kernel: lane (g, quad) quantizes row g's K chunks
// 4j + quad and writes its words back in d order.
template <int kD>
__global__ void q_quant_rows(const std::uint16_t* q, int rows, std::uint8_t* q8, float* scale) {
  using T = Fp8QkTraits<kD>;
  const Lane ln{static_cast<int>(threadIdx.x), static_cast<int>(threadIdx.x) / 4, static_cast<int>(threadIdx.x) % 4};
  const int row = blockIdx.x * 8 + ln.group;
  const bool live = row < rows;
  QRaw<T> raw;
  fetch_q_row<T>(q + static_cast<std::size_t>(live ? row : 0) * kD, live, ln, raw);
  QFragment<T> frag;
  const float s = q_quant<T>(raw, frag);
  if (!live) return;
  for (int j = 0; j < QFragment<T>::kChunkGroups; ++j) {
    for (int k = 0; k < 4; ++k) {
      const int d = 16 * (4 * j + ln.quad) + 4 * k;
      std::memcpy(q8 + static_cast<std::size_t>(row) * kD + d, &frag.w[j * 4 + k], 4);
    }
  }
  if (ln.quad == 0) scale[row] = s;
}

std::uint16_t bf16_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return static_cast<std::uint16_t>(u >> 16);  // truncation: any bf16 pattern is a valid test input
}

// Rows that stress the rounding: random normals at several magnitudes, exact E4M3
// midpoints (x / scale lands halfway between two E4M3 values when amax = 448·scale),
// tiny values next to a large one (quotients below E4M3's smallest subnormal), +0 and -0,
// every bf16 pattern of one exponent, the largest finite bf16, and tiny rows whose
// 1/scale would overflow a float (amax from ~2^-140 to 2^-100, subnormal bf16
// included), which the kernel rescales by 2^64. Rows below ~2^-141 are left out:
// there scale = amax / 448 is 0 in the reference itself.
constexpr int kStressKinds = 7;

std::vector<std::uint16_t> stress_rows(int d, int rows, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::uint16_t> q(static_cast<std::size_t>(rows) * d);
  for (int r = 0; r < rows; ++r) {
    std::uint16_t* row = &q[static_cast<std::size_t>(r) * d];
    const int kind = r % kStressKinds;
    for (int i = 0; i < d; ++i) {
      float x = 0.0f;
      switch (kind) {
        case 0:
          x = normal(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20);
          break;
        case 1:
          x = (i == 0 ? 448.0f : (static_cast<float>(rng() % 900) + 0.5f) * 0.5f);
          break;  // halfway points
        case 2:
          x = i == 0 ? 3.0e4f : normal(rng) * 1e-3f;
          break;  // underflow side
        case 3:
          x = i % 3 == 0 ? (i % 2 ? -0.0f : 0.0f) : -normal(rng);
          break;   // signed zeros
        case 4: {  // every mantissa of one binade, both signs
          const std::uint16_t bits = static_cast<std::uint16_t>(0x3F80u | ((i + r) & 0x7Fu) | ((i & 1u) << 15));
          row[i] = bits;
          continue;
        }
        case 5:
          x = i == d - 1 ? 3.3895e38f : normal(rng);
          break;  // largest bf16
        default:
          x = normal(rng) * std::ldexp(1.0f, -100 - static_cast<int>(rng() % 40));
          break;  // tiny rows
      }
      row[i] = bf16_bits(x);
    }
  }
  return q;
}

template <int kD>
void expect_bit_identical(int rows, std::uint32_t seed) {
  const std::vector<std::uint16_t> q = stress_rows(kD, rows, seed);
  std::uint16_t* d_q = nullptr;
  std::uint8_t* d_q8 = nullptr;
  float* d_scale = nullptr;
  ASSERT_EQ(cudaMalloc(&d_q, q.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_q8, q.size()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_scale, rows * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_q, q.data(), q.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(d_q8, 0xAB, q.size()), cudaSuccess);  // poison
  q_quant_rows<kD><<<(rows + 7) / 8, 32>>>(d_q, rows, d_q8, d_scale);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<std::uint8_t> q8(q.size());
  std::vector<float> scale(rows);
  ASSERT_EQ(cudaMemcpy(q8.data(), d_q8, q8.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(scale.data(), d_scale, rows * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(d_q);
  cudaFree(d_q8);
  cudaFree(d_scale);

  int mismatched_rows = 0;
  for (int r = 0; r < rows; ++r) {
    std::vector<std::uint8_t> expected(kD);
    const float expected_scale =
        tilepath::numerics::quantize_q_row_e4m3(&q[static_cast<std::size_t>(r) * kD], kD, expected.data());
    const bool same = std::memcmp(expected.data(), &q8[static_cast<std::size_t>(r) * kD], kD) == 0 &&
                      std::memcmp(&expected_scale, &scale[r], 4) == 0;
    if (!same && ++mismatched_rows <= 3) {
      for (int i = 0; i < kD; ++i) {
        if (expected[i] != q8[static_cast<std::size_t>(r) * kD + i]) {
          ADD_FAILURE() << "D=" << kD << " row " << r << " (kind " << r % kStressKinds << ") d " << i << ": kernel 0x"
                        << std::hex << int(q8[static_cast<std::size_t>(r) * kD + i]) << ", reference 0x"
                        << int(expected[i]);
          break;
        }
      }
      if (std::memcmp(&expected_scale, &scale[r], 4) != 0)
        ADD_FAILURE() << "D=" << kD << " row " << r << ": scale " << scale[r] << " vs " << expected_scale;
    }
  }
  EXPECT_EQ(mismatched_rows, 0) << "of " << rows << " rows";
}

class QQuant : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = test::no_cuda_device_reason();
    if (!reason.empty()) GTEST_SKIP() << "no CUDA device: " << reason;
  }
};

TEST_F(QQuant, MatchesTheHostReferenceBitForBitAtEveryHeadDim) {
  const std::uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  expect_bit_identical<64>(6000, seed);
  expect_bit_identical<128>(6000, seed + 1);
  expect_bit_identical<256>(6000, seed + 2);
}

}  // namespace
