// What the k_bias stage's F16 arithmetic costs an attention output, on the host: for one
// request of a post-RoPE prebias K8/V8 problem (the generator of `tilepath sweep`, keys from
// models/keys/<keys>.json), every q head's output with the exact bias score q·RoPE_t(b) and
// with the score as the CUDA kernels compute it (EmulatedKBias: F16 (α, β) words against the
// F16 cos/sin table, float turns along each warp's tiles), everything else the same float64
// arithmetic on the stored cache. The rel_l2 between the two is the part of the kernel check's
// error (backends/cuda/output_check.cpp) that the stage's rounding alone explains.
//
// Build from the repository root after a build into build-device/, and run:
//   LIBS="build-device/backends/libtilepath_cuda_tables.a build-device/core/libtilepath_numerics.a
//         build-device/core/libtilepath_types.a -lpthread"
//   g++ -std=c++20 -O2 -I. -I build-device -o kbias_f16_effect bench/kbias_f16_effect.cpp $LIBS
//   TILEPATH_MODELS_DIR=$PWD/models ./kbias_f16_effect 8192        # S [warp stride [seed]]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "backends/cuda/emulated_k_bias.h"
#include "core/numerics/decode_problem.h"
#include "core/numerics/fp8.h"
#include "core/operating_point.h"

using namespace tilepath;

namespace {

constexpr int kHeadDim = 128, kQHeads = 32, kKvHeads = 8, kPage = 16, kTile = cuda::kBiasTileTokens;

// Where token t of request 0, kv head h starts in the paged cache (decode_problem.h's layout).
std::size_t cache_row(const numerics::DecodeProblem& p, int t, int h) {
  return ((std::size_t(p.page_table[t / kPage]) * kPage + t % kPage) * kKvHeads + h) * kHeadDim;
}

// softmax(s) · V of kv head h for request 0, float64.
std::vector<double> attend(const numerics::DecodeProblem& p, int h, const std::vector<double>& s) {
  const double top = *std::max_element(s.begin(), s.end());
  std::vector<double> o(kHeadDim, 0.0);
  double sum = 0;
  for (std::size_t t = 0; t < s.size(); ++t) {
    const double e = std::exp(s[t] - top);
    sum += e;
    const std::size_t at = cache_row(p, static_cast<int>(t), h);
    for (int d = 0; d < kHeadDim; ++d) o[d] += e * numerics::e4m3_to_float(p.v8[at + d]) * p.v_scale[h];
  }
  for (double& x : o) x /= sum;
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CONTEXT [WARP_STRIDE (2)] [SEED (1)]\n", argv[0]);
    return 2;
  }
  const int S = std::atoi(argv[1]);
  const int stride = argc > 2 ? std::atoi(argv[2]) : 2;  // MMA warps per kv head (kBiasMaxWarpStride)
  const unsigned seed = argc > 3 ? static_cast<unsigned>(std::atoi(argv[3])) : 1u;
  if (S < kTile || stride < 1 || stride > cuda::kBiasMaxWarpStride) {
    std::fprintf(stderr, "CONTEXT must be at least %d, WARP_STRIDE 1..%d\n", kTile, cuda::kBiasMaxWarpStride);
    return 2;
  }
  OperatingPoint op;
  op.batch = 1;
  op.context = S;
  op.q_heads = kQHeads;
  op.kv_heads = kKvHeads;
  op.head_dim = kHeadDim;
  op.page_size = kPage;
  op.kv = KvDtype::k8v8;
  op.k_path = KPath::transform;
  op.mode = TransformMode::full;
  op.k_repr = KRepr::prebias;
  op.rope = RopeLayout::post_rope;
  const numerics::DecodeProblem p = numerics::make_problem(op, seed, numerics::KeyDistribution::qwen_bias);
  const cuda::BiasRotationTables tables = cuda::make_bias_rotation_tables(kHeadDim);
  const int group = kQHeads / kKvHeads;

  double diff_sq = 0, ref_sq = 0, worst_logit = 0, largest_qb = 0, worst_relative = 0;
  for (int h = 0; h < kKvHeads; ++h) {
    const std::vector<float> b(p.k_bias.begin() + h * kHeadDim, p.k_bias.begin() + (h + 1) * kHeadDim);
    for (int g = 0; g < group; ++g) {
      std::vector<float> q(kHeadDim);
      double qb = 0;
      for (int d = 0; d < kHeadDim; ++d) {
        q[d] = numerics::bf16_to_float(p.q[std::size_t(h * group + g) * kHeadDim + d]);
        qb += std::fabs(double(q[d]) * b[d]);
      }
      largest_qb = std::max(largest_qb, qb);
      // The kernel's bias scores: warp w takes tiles w, w + stride, ... of the request.
      std::vector<double> emulated(S);
      for (int w = 0; w < stride; ++w) {
        cuda::EmulatedKBias walk(tables, q, b, static_cast<std::uint32_t>(w), stride);
        for (int m = w; m * kTile < S; m += stride) {
          const std::vector<double> tile = walk.next_tile();
          for (int k = 0; k < kTile && m * kTile + k < S; ++k) emulated[m * kTile + k] = tile[k];
        }
      }
      std::vector<double> exact(S), kernel(S);
      for (int t = 0; t < S; ++t) {
        const std::size_t at = cache_row(p, t, h);
        double qk = 0;
        for (int d = 0; d < kHeadDim; ++d) qk += double(q[d]) * numerics::e4m3_to_float(p.k8[at + d]) * p.k_scale[h];
        const double bias = cuda::exact_bias_score(q, b, t);
        exact[t] = p.softmax_scale * (qk + bias);
        kernel[t] = p.softmax_scale * (qk + emulated[t]);
        worst_logit = std::max(worst_logit, std::fabs(exact[t] - kernel[t]));
        // the score's error against the row's sum |q_d b_d|, the size the stage's bound is stated in
        worst_relative = std::max(worst_relative, std::fabs(emulated[t] - bias) / qb);
      }
      const std::vector<double> o_exact = attend(p, h, exact), o_kernel = attend(p, h, kernel);
      for (int d = 0; d < kHeadDim; ++d) {
        diff_sq += (o_exact[d] - o_kernel[d]) * (o_exact[d] - o_kernel[d]);
        ref_sq += o_exact[d] * o_exact[d];
      }
    }
  }
  std::printf(
      "S=%d warp stride %d seed %u: output rel_l2 of the kernel's k_bias arithmetic %.4f; worst logit error %.4f; "
      "largest sum|q_d b_d| %.1f; worst score error over its row's sum|q_d b_d| %.2e\n",
      S, stride, seed, std::sqrt(diff_sq / ref_sq), worst_logit, largest_qb, worst_relative);
  return 0;
}
