#pragma once
// Instantiates one variant family: the three head dims without ablations, and the
// stage ablations at D = 128 only (compile time grows with every instantiation);
// append_two_head_family: D = 128 with two kv heads per CTA, ablations included, so
// the stage costs of a case come from the kernel that ran it.

#include <cstdio>
#include <type_traits>
#include <vector>

#include "backends/cuda/kernels/decode_kernel.cuh"
#include "backends/cuda/kernels/kernel_launch.cuh"
#include "backends/cuda/kernels/variant_table.h"

namespace tilepath::cuda::kernels {

// What the launches of decode_attention_kernel<T> remember.
template <class T>
KernelLaunchState& main_launch_state() {
  static KernelLaunchState state;
  return state;
}

template <class T>
cudaError_t launch_main(const DecodeArgs& args, int head_chunks, int ctas_per_sm_cap, cudaStream_t stream,
                        KernelInfo* info) {
  if (args.kv_heads % T::kKvHeadsPerCta != 0) return cudaErrorNotSupported;
  const dim3 grid(args.splits, args.kv_heads / T::kKvHeadsPerCta * head_chunks, args.batch);
  const KernelParams params{args, head_chunks, page_shift_of(args.page_size), 0u};
  return launch_decode_kernel(&decode_attention_kernel<T>, params, grid, dim3(T::kThreads), T::kSmemBytes,
                              T::kCtaTokens, ctas_per_sm_cap, main_launch_state<T>(), stream, info);
}

template <class T>
cudaError_t main_resources(KernelResources* out) {
  return kernel_resources(&decode_attention_kernel<T>, T::kThreads, T::kSmemBytes, main_launch_state<T>(), out);
}

template <KOperand KO, VOperand VO, bool kSep, int kD, AblationKind kAbl, int kStage, int kKvPerCta = 1,
          bool kPrebias = false>
VariantEntry variant_entry(int kv_dtype, int k_path, int mode) {
  using Plain = DecodeTraits<KO, VO, kSep, kD, kAbl, kStage, kKvPerCta>;
  using T = std::conditional_t<kPrebias, PrebiasTraits<Plain>, Plain>;
  VariantEntry e{kv_dtype,       k_path, mode,      kD,
                 kAbl,           kStage, kKvPerCta, kPrebias ? TP_KREPR_PREBIAS : TP_KREPR_PLAIN,
                 &launch_main<T>};
  e.resources = &main_resources<T>;
  return e;
}

template <KOperand KO, VOperand VO, bool kSep, int kStage, int kKvPerCta = 1>
void append_stage_ablations(std::vector<VariantEntry>& out, int kv, int path, int mode) {
  out.push_back(variant_entry<KO, VO, kSep, 128, AblationKind::remove, kStage, kKvPerCta>(kv, path, mode));
  out.push_back(variant_entry<KO, VO, kSep, 128, AblationKind::twice, kStage, kKvPerCta>(kv, path, mode));
}

// The stage ablations and the load-only kernel, at D = 128 only.
template <KOperand KO, VOperand VO, bool kSep, int kKvPerCta>
void append_d128_ablations(std::vector<VariantEntry>& out, int kv, int path, int mode) {
  using T = DecodeTraits<KO, VO, kSep, 128, AblationKind::none, -1, kKvPerCta>;
  if constexpr (T::kHasKPrep) append_stage_ablations<KO, VO, kSep, TP_STAGE_K_PREP, kKvPerCta>(out, kv, path, mode);
  append_stage_ablations<KO, VO, kSep, TP_STAGE_QK, kKvPerCta>(out, kv, path, mode);
  append_stage_ablations<KO, VO, kSep, TP_STAGE_SOFTMAX, kKvPerCta>(out, kv, path, mode);
  if constexpr (T::kHasVPrep) append_stage_ablations<KO, VO, kSep, TP_STAGE_V_PREP, kKvPerCta>(out, kv, path, mode);
  append_stage_ablations<KO, VO, kSep, TP_STAGE_PV, kKvPerCta>(out, kv, path, mode);
  out.push_back(variant_entry<KO, VO, kSep, 128, AblationKind::load_only, -1, kKvPerCta>(kv, path, mode));
}

// The isolated stage kernels of one D = 128 variant: every per-tile stage of its graph and
// q_quant (fp8_qk) each alone, k_load and v_load each as the only loads (combine alone is
// the combine kernel: launch_decode). Their translation units are decode_isolated_*.cu.
template <KOperand KO, VOperand VO, bool kSep, int kKvPerCta = 1, bool kPrebias = false>
void append_isolated_stages(std::vector<VariantEntry>& out, int kv, int path, int mode) {
  using T = DecodeTraits<KO, VO, kSep, 128, AblationKind::none, -1, kKvPerCta>;
  constexpr AblationKind kIso = AblationKind::isolate;
  out.push_back(variant_entry<KO, VO, kSep, 128, kIso, TP_STAGE_K_LOAD, kKvPerCta, kPrebias>(kv, path, mode));
  out.push_back(variant_entry<KO, VO, kSep, 128, kIso, TP_STAGE_V_LOAD, kKvPerCta, kPrebias>(kv, path, mode));
  if constexpr (T::kQFp8)
    out.push_back(variant_entry<KO, VO, kSep, 128, kIso, TP_STAGE_Q_QUANT, kKvPerCta, kPrebias>(kv, path, mode));
  if constexpr (T::kHasKPrep)
    out.push_back(variant_entry<KO, VO, kSep, 128, kIso, TP_STAGE_K_PREP, kKvPerCta, kPrebias>(kv, path, mode));
  out.push_back(variant_entry<KO, VO, kSep, 128, kIso, TP_STAGE_QK, kKvPerCta, kPrebias>(kv, path, mode));
  if constexpr (kPrebias)
    out.push_back(variant_entry<KO, VO, kSep, 128, kIso, TP_STAGE_K_BIAS, kKvPerCta, kPrebias>(kv, path, mode));
  out.push_back(variant_entry<KO, VO, kSep, 128, kIso, TP_STAGE_SOFTMAX, kKvPerCta, kPrebias>(kv, path, mode));
  if constexpr (T::kHasVPrep && !T::kVPrepInPvStage)
    out.push_back(variant_entry<KO, VO, kSep, 128, kIso, TP_STAGE_V_PREP, kKvPerCta, kPrebias>(kv, path, mode));
  out.push_back(variant_entry<KO, VO, kSep, 128, kIso, TP_STAGE_PV, kKvPerCta, kPrebias>(kv, path, mode));
  out.push_back(variant_entry<KO, VO, kSep, 128, kIso, TP_STAGE_ACCUM, kKvPerCta, kPrebias>(kv, path, mode));
}

template <KOperand KO, VOperand VO, bool kSep>
void append_family(std::vector<VariantEntry>& out, int kv, int path, int mode) {
  constexpr AblationKind kNone = AblationKind::none;
  out.push_back(variant_entry<KO, VO, kSep, 64, kNone, -1>(kv, path, mode));
  out.push_back(variant_entry<KO, VO, kSep, 128, kNone, -1>(kv, path, mode));
  out.push_back(variant_entry<KO, VO, kSep, 256, kNone, -1>(kv, path, mode));
  append_d128_ablations<KO, VO, kSep, 1>(out, kv, path, mode);
}

template <KOperand KO, VOperand VO>
void append_two_head_family(std::vector<VariantEntry>& out, int kv, int path, int mode) {
  out.push_back(variant_entry<KO, VO, false, 128, AblationKind::none, -1, 2>(kv, path, mode));
  append_d128_ablations<KO, VO, false, 2>(out, kv, path, mode);
}

}  // namespace tilepath::cuda::kernels

namespace tilepath::cuda::kernels {

// A post-RoPE prebias K8/V8 variant at D = 128 with one and two kv heads per CTA, their
// k_bias ablations (only k_bias's: each ablation is another kernel to compile) and their
// load_only kernel (the ring measured whole, at the prebias kernel's own occupancy).
template <KOperand KO, VOperand VO>
void append_prebias_family(std::vector<VariantEntry>& out, int kv, int path, int mode) {
  constexpr AblationKind kNone = AblationKind::none, kRemove = AblationKind::remove, kTwice = AblationKind::twice,
                         kLoadOnly = AblationKind::load_only;
  constexpr int kBias = TP_STAGE_K_BIAS;
  out.push_back(variant_entry<KO, VO, false, 128, kNone, -1, 1, true>(kv, path, mode));
  out.push_back(variant_entry<KO, VO, false, 128, kRemove, kBias, 1, true>(kv, path, mode));
  out.push_back(variant_entry<KO, VO, false, 128, kTwice, kBias, 1, true>(kv, path, mode));
  out.push_back(variant_entry<KO, VO, false, 128, kLoadOnly, -1, 1, true>(kv, path, mode));
  out.push_back(variant_entry<KO, VO, false, 128, kNone, -1, 2, true>(kv, path, mode));
  out.push_back(variant_entry<KO, VO, false, 128, kRemove, kBias, 2, true>(kv, path, mode));
  out.push_back(variant_entry<KO, VO, false, 128, kTwice, kBias, 2, true>(kv, path, mode));
  out.push_back(variant_entry<KO, VO, false, 128, kLoadOnly, -1, 2, true>(kv, path, mode));
}

}  // namespace tilepath::cuda::kernels
