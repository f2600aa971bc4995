// The launcher: the variant table, the main kernel and the split-KV combine.
#include <algorithm>
#include <mutex>

#include "backends/hip/kernels/combine_kernel.h"
#include "backends/hip/kernels/variant_table.h"

namespace tilepath::hip {
namespace kernels {

const std::vector<VariantEntry>& variant_entries() {
  static const std::vector<VariantEntry> table = [] {
    std::vector<VariantEntry> t;
    append_k16v16_variants(t);
    append_k16v8_variants(t);
    append_k8v16_variants(t);
    append_k8v8_transform_variants(t);
    append_k8v8_fp8qk_variants(t);
    return t;
  }();
  return table;
}

namespace {

const VariantEntry* find_entry(const DecodeArgs& args, const Ablation& ablation) {
  const int stage = ablation.kind == AblationKind::remove || ablation.kind == AblationKind::twice ? ablation.stage : -1;
  for (const VariantEntry& e : variant_entries()) {
    const VariantInfo& v = e.info;
    if (v.kv_dtype == args.kv_dtype && v.k_path == args.k_path && v.mode == args.mode && v.head_dim == args.head_dim &&
        v.ablation == ablation.kind && v.ablated_stage == stage)
      return &e;
  }
  return nullptr;
}

hipError_t launch_combine(const DecodeArgs& args, hipStream_t stream) {
  const CombineParams params{args};
  const dim3 grid(static_cast<unsigned>(args.batch * args.q_heads));
  switch (args.head_dim) {
    case 64:
      hipLaunchKernelGGL(combine_kernel<64>, grid, dim3(64), 0, stream, params);
      break;
    case 128:
      hipLaunchKernelGGL(combine_kernel<128>, grid, dim3(64), 0, stream, params);
      break;
    case 256:
      hipLaunchKernelGGL(combine_kernel<256>, grid, dim3(64), 0, stream, params);
      break;
    default:
      return hipErrorInvalidValue;
  }
  return hipGetLastError();
}

int head_chunks_of(const DecodeArgs& args) {
  const int group = args.q_heads / args.kv_heads;
  return (group + kHeadsPerWorkgroup - 1) / kHeadsPerWorkgroup;
}

}  // namespace
}  // namespace kernels

const std::vector<VariantInfo>& decode_variants() {
  static const std::vector<VariantInfo> infos = [] {
    std::vector<VariantInfo> v;
    for (const kernels::VariantEntry& e : kernels::variant_entries()) v.push_back(e.info);
    return v;
  }();
  return infos;
}

const VariantInfo* find_variant(const DecodeArgs& args, const Ablation& ablation) {
  const kernels::VariantEntry* e = kernels::find_entry(args, ablation);
  return e ? &e->info : nullptr;
}

std::size_t decode_workspace_bytes(const DecodeArgs& args) {
  if (args.splits <= 1) return 0;
  const std::size_t rows = static_cast<std::size_t>(args.splits) * args.batch * args.q_heads;
  return rows * args.head_dim * sizeof(float) + rows * sizeof(float);
}

hipError_t launch_decode(const DecodeArgs& args, const Ablation& ablation, hipStream_t stream, KernelInfo* info) {
  const kernels::VariantEntry* e = kernels::find_entry(args, ablation);
  if (e == nullptr) return hipErrorInvalidDeviceFunction;
  const int chunks = kernels::head_chunks_of(args);
  if (const hipError_t err = e->launch(args, chunks, stream); err != hipSuccess) return err;
  if (info != nullptr) {
    info->variant = &e->info;
    info->grid[0] = args.splits, info->grid[1] = args.kv_heads * chunks, info->grid[2] = args.batch;
    info->block[0] = e->info.threads, info->block[1] = 1, info->block[2] = 1;
  }
  return args.splits > 1 ? kernels::launch_combine(args, stream) : hipSuccess;
}

int split_tokens_for(int max_len, int splits) {
  const int per_split = (max_len + splits - 1) / std::max(1, splits);
  return std::max(32, (per_split + 31) / 32 * 32);
}

int choose_splits(int batch, int kv_heads, int head_chunks, int max_len, int cu_count) {
  // One workgroup per CU at least; a split covers at least 4 wave tiles per wave (512 tokens).
  const int workgroups = batch * kv_heads * head_chunks;
  if (workgroups >= cu_count || max_len < 1) return 1;
  const int by_cus = (cu_count + workgroups - 1) / workgroups;
  const int by_length = std::max(1, max_len / 512);
  const int filling = std::max(1, std::min({by_cus, by_length, 64}));
  // Only the splits that hold tokens: split_tokens_for rounds up to a wave tile, so the count
  // that fills the CUs can hold an empty last split (38 splits of 24576 tokens are 672 long and
  // 37 cover them), which would still launch its workgroups and add a partial to the combine.
  const int split_tokens = split_tokens_for(max_len, filling);
  return (max_len + split_tokens - 1) / split_tokens;
}

}  // namespace tilepath::hip
