#pragma once
// Instantiates one variant family: the three head dims without ablations, and the stage
// ablations at D = 128 only (compile time grows with every instantiation), as the CUDA
// backend does.

#include <string>
#include <vector>

#include "backends/abi/tilepath_names.h"
#include "backends/hip/kernel_symbols.h"
#include "backends/hip/kernels/decode_kernel.h"
#include "backends/hip/kernels/variant_table.h"

namespace tilepath::hip::kernels {

template <int kKv, int kPath, int kMode, int kD, int kAbl, int kStage>
hipError_t launch_main(const DecodeArgs& args, int head_chunks, hipStream_t stream) {
  const KernelParams params{args, head_chunks, 0u};
  const dim3 grid(static_cast<unsigned>(args.splits), static_cast<unsigned>(args.kv_heads * head_chunks),
                  static_cast<unsigned>(args.batch));
  hipLaunchKernelGGL((decode_attention_kernel<kKv, kPath, kMode, kD, kAbl, kStage>), grid, dim3(256), 0, stream,
                     params);
  return hipGetLastError();
}

template <int kKv, int kPath, int kMode, int kD, int kAbl, int kStage>
VariantEntry variant_entry() {
  using T = DecodeTraits<kKv, kPath, kMode, kD, kAbl, kStage>;
  VariantInfo info{};
  info.kv_dtype = kKv;
  info.k_path = kPath;
  info.mode = kMode;
  info.head_dim = kD;
  info.ablation = static_cast<AblationKind>(kAbl);
  info.ablated_stage = kStage;
  info.name = variant_name(kKv, kPath, kMode, kD, info.ablation, kStage);
  info.symbol_prefix = decode_symbol_prefix(kKv, kPath, kMode, kD, kAbl, kStage);
  info.fp8_qk_mfma = T::kQFp8;
  info.fp8_pv_mfma = T::kPFp8;
  info.bf16_mfma = !T::kQFp8 || !T::kPFp8;
  info.target_waves_per_simd = T::kTargetWavesPerSimd;
  info.lds_bytes = T::kLdsBytes;
  info.threads = T::kThreads;
  info.tile_tokens = T::kWgTokens;
  return {info, &launch_main<kKv, kPath, kMode, kD, kAbl, kStage>};
}

template <int kKv, int kPath, int kMode, int kStage>
void append_stage_ablations(std::vector<VariantEntry>& out) {
  out.push_back(variant_entry<kKv, kPath, kMode, 128, int(AblationKind::remove), kStage>());
  out.push_back(variant_entry<kKv, kPath, kMode, 128, int(AblationKind::twice), kStage>());
}

// The stage ablations and the load-only kernel, at D = 128 only.
template <int kKv, int kPath, int kMode>
void append_d128_ablations(std::vector<VariantEntry>& out) {
  using T = DecodeTraits<kKv, kPath, kMode, 128, 0, -1>;
  if constexpr (T::kHasKPrep) append_stage_ablations<kKv, kPath, kMode, TP_STAGE_K_PREP>(out);
  append_stage_ablations<kKv, kPath, kMode, TP_STAGE_QK>(out);
  append_stage_ablations<kKv, kPath, kMode, TP_STAGE_SOFTMAX>(out);
  if constexpr (T::kHasVPrep) append_stage_ablations<kKv, kPath, kMode, TP_STAGE_V_PREP>(out);
  append_stage_ablations<kKv, kPath, kMode, TP_STAGE_PV>(out);
  out.push_back(variant_entry<kKv, kPath, kMode, 128, int(AblationKind::load_only), -1>());
}

template <int kKv, int kPath, int kMode>
void append_family(std::vector<VariantEntry>& out) {
  constexpr int kNone = int(AblationKind::none);
  out.push_back(variant_entry<kKv, kPath, kMode, 64, kNone, -1>());
  out.push_back(variant_entry<kKv, kPath, kMode, 128, kNone, -1>());
  out.push_back(variant_entry<kKv, kPath, kMode, 256, kNone, -1>());
#ifndef TILEPATH_HIP_NO_ABLATIONS
  append_d128_ablations<kKv, kPath, kMode>(out);
#endif
}

}  // namespace tilepath::hip::kernels
