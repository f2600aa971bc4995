#pragma once
// Random inputs of one decode step over a paged KV cache, stored exactly as a
// kernel reads them, plus the float64 reference output. Shared by the cpu and
// cuda backends so both check against the same function.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/operating_point.h"

namespace tilepath::numerics {

enum class KeyDistribution { gaussian, heavy_tailed, qwen_bias };
// "gaussian" | "heavy_tailed" | "qwen_bias"; parse throws ValidationError naming `field`.
std::string_view to_string(KeyDistribution d);
KeyDistribution parse_key_distribution(std::string_view s, std::string_view field = "keys");

// Layout (all row-major):
//   q        [batch][q_heads][head_dim]                      BF16 bits
//   k_pages  [num_pages][page_size][kv_heads][head_dim]      BF16 bits (K16) or E4M3 bytes (K8)
//   v_pages  same as k_pages                                 BF16 or E4M3
//   page_table [batch][max_pages_per_seq]                    int32 page ids (shuffled, not contiguous)
//   lengths  [batch]                                         int32 tokens per request
//   k_scale / v_scale  [kv_heads] (per_head) or [1] (per_tensor): dequant = e4m3 * scale
//            (mxfp8: 1.0 and unused; the block scales below take their place)
//   k_mx_scales [num_pages][page_size][kv_heads][head_dim/32]  E8M0 codes (k_repr mxfp8 only):
//            the OCP MX block scales of k8, one per 32 elements along head_dim, in k8's slot
//            order, so element i of k8 has scale k_mx_scales[i / 32]:
//            K = mxfp8_value(k8[i], k_mx_scales[i / 32]) = e4m3 * 2^(code - 127) (mxfp8.h)
//   v_mx_scales same for v8, when k_repr is mxfp8 and V is FP8 (an mxfp8 case stores every
//            FP8 tensor as MXFP8, as the gate evaluates it); empty otherwise
//            Each token's head row is numerics::mxfp8_quantize of its BF16 original (pre_rope:
//            the unrotated key, post_rope: the rotated one), so the bytes equal the gate's.
//            Padding slots hold element 0 with scale code 0.
//   k_bias   [kv_heads][head_dim] float (prebias only): the distribution's key bias b, exact;
//            pre_rope: K = b + scale*e4m3; post_rope: K_t = RoPE_t(b) + scale*e4m3 (the
//            cache holds the rotated key less the rotated bias, and the kernel rebuilds RoPE_t(b))
// GQA: q head qh reads kv head qh / (q_heads / kv_heads).
// RoPE (rope.h; position = token index): a post_rope cache holds rotated keys, so a
// constant key bias turns with position; a pre_rope cache holds unrotated keys
// (bias + residual) and attention rotates each reconstructed key at its position
// (with RopeTable's float angles) before QK.
// Token t of request b lives in page page_table[b][t / page_size], slot t % page_size.
// page_table entries past a request's last page are 0 (a valid page; never read).
// Non-FP8 tensors still get scales of 1.0 so kernels can index them uniformly.
// Originals: Q ~ N(0,1); K per `dist` (unit residual std); V ~ N(0,1); all rounded to
// BF16 (the model's own precision) before any FP8 quantization.
// Output o: [batch][q_heads][head_dim] float (kernels round to BF16 when they store).
struct DecodeProblem {
  OperatingPoint op;
  int num_pages = 0;
  int max_pages_per_seq = 0;
  std::vector<std::uint16_t> q;
  std::vector<std::uint16_t> k16, v16;  // used when K/V are BF16
  std::vector<std::uint8_t> k8, v8;     // used when K/V are E4M3
  std::vector<std::int32_t> page_table;
  std::vector<std::int32_t> lengths;
  std::vector<float> k_scale, v_scale;
  std::vector<std::uint8_t> k_mx_scales, v_mx_scales;  // E8M0 block scales (k_repr mxfp8)
  std::vector<float> k_bias;
  float softmax_scale = 0;  // 1/sqrt(head_dim)

  std::size_t k_page_elems() const;  // elements per page (page_size*kv_heads*head_dim)
};

// Fresh random problem (seeded). The stored K/V are quantized from float
// originals with the op's scale granularity (mxfp8: per 32-element block); the originals
// are not kept. mxfp8 needs head_dim to be a multiple of 32 (ValidationError naming
// head_dim otherwise).
// `keys` (every function here that takes one): dist's parameters, NULL = the built-in
// models/keys/<dist>.json (key_model.h).
struct KeyModel;
DecodeProblem make_problem(const OperatingPoint& op, std::uint64_t seed,
                           KeyDistribution dist = KeyDistribution::gaussian, const KeyModel* keys = nullptr);

// float64 reference of attention over the STORED (dequantized) cache:
// out[b][h][d] = sum_t softmax(q.k_t * scale) v_t. For fp8_qk it quantizes Q to E4M3
// exactly as the kernel does (per-head amax/448 scale) so both compute the same function.
std::vector<double> reference_decode(const DecodeProblem& p);
// The same for the listed requests only: [requests.size()][q_heads][head_dim] in the order
// given (large cases check a sample of requests to bound the float64 cost).
std::vector<double> reference_decode(const DecodeProblem& p, const std::vector<int>& requests);
// The same, also returning the attention weights: weights[(i * q_heads + qh)] holds
// request requests[i]'s softmax over its tokens for q head qh.
std::vector<double> reference_decode(const DecodeProblem& p, const std::vector<int>& requests,
                                     std::vector<std::vector<double>>& weights);

// How an fp8_qk kernel quantizes Q: OCP E4M3 (amax/448; the CUDA and cpu kernels) or
// E4M3 FNUZ (amax/240; gfx942's FP8, the HIP kernels: quantize_q_row_e4m3_fnuz, fp8_fnuz.h).
enum class QQuantization { e4m3_ocp, e4m3_fnuz };
// reference_decode(p, requests) with the fp8_qk query quantized in q_format (the other K
// paths read Q as given, whatever q_format says).
std::vector<double> reference_decode(const DecodeProblem& p, const std::vector<int>& requests, QQuantization q_format);

// The attention scale every problem uses: 1 / sqrt(head_dim), in float.
float softmax_scale_for(int head_dim);

// The fp8_qk Q quantization, one (batch, q head) row: scale = amax/448 in float (1 for an
// all-zero row), q8[d] = float_to_e4m3(q[d] / scale). Returns the scale. Kernels call
// this (or match it bit for bit); QK is then q_scale*k_scale*(q8.k8), and a prebias
// K adds the score-space correction (q8*q_scale).b_t with b_t the bias as the layout
// stores it (rotated for post_rope), i.e. the same dequantized Q. An MXFP8 K takes the
// block-scaled dot instead: q_scale * sum over 32-element blocks b of 2^X_b * (q8_b.k8_b).
float quantize_q_row_e4m3(const std::uint16_t* q_bf16, int head_dim, std::uint8_t* q8_out);

// The unquantized problem behind make_problem(op, seed, dist): the same query, lengths
// and pages, with the original BF16 keys (bias included, rotated as the layout stores
// them) and values, read with the BF16 query. Its reference_decode is attention at full
// precision on a case's own inputs: what the numerical gate compares a kernel's output with.
OperatingPoint full_precision_op(const OperatingPoint& op);
DecodeProblem make_full_precision_problem(const OperatingPoint& op, std::uint64_t seed,
                                          KeyDistribution dist = KeyDistribution::gaussian,
                                          const KeyModel* keys = nullptr);
// The same for the listed requests only (request i is make_problem's requests[i]), in
// contiguous pages: what the gate of a large case needs without the whole cache twice.
DecodeProblem make_full_precision_requests(const OperatingPoint& op, std::uint64_t seed, KeyDistribution dist,
                                           const std::vector<int>& requests, const KeyModel* keys = nullptr);

// Quality gate: attention in float64 over the ORIGINAL (BF16, never FP8-quantized)
// Q/K/V that make_problem(op, seed, dist) quantized. Regenerated from the seed, so it
// costs no memory in the problem. Compare it with reference_decode(p) to get the error
// that the cache representation itself causes.
std::vector<double> reference_decode_original(const OperatingPoint& op, std::uint64_t seed,
                                              KeyDistribution dist = KeyDistribution::gaussian);

struct ErrorStats {
  double rel_l2 = 0;  // ||out-ref|| / ||ref||
  double max_abs = 0;
  bool all_finite = true;
};
ErrorStats compare(const std::vector<float>& out, const std::vector<double>& ref);
ErrorStats compare(const std::vector<double>& out, const std::vector<double>& ref);

// Default rel_l2 tolerance for a variant (BF16 output rounding + P/Q quantization).
double default_tolerance(const OperatingPoint& op);

// Write the problem and an output as .npy files plus manifest.json into dir.
void save_problem_npy(const DecodeProblem& p, const std::vector<float>& out, const std::string& dir);

}  // namespace tilepath::numerics
