#include "backends/hip/kernel_symbols.h"

#include "backends/abi/tilepath_names.h"

namespace tilepath::hip {
namespace {

// An int template argument in the Itanium ABI: L i <number> E, negative as n<number>.
std::string int_argument(int v) { return "Li" + (v < 0 ? "n" + std::to_string(-v) : std::to_string(v)) + "E"; }

const char* ablation_label(AblationKind kind) {
  switch (kind) {
    case AblationKind::remove:
      return "remove";
    case AblationKind::twice:
      return "twice";
    case AblationKind::load_only:
      return "load_only";
    case AblationKind::none:
      break;
  }
  return "";
}

}  // namespace

std::string variant_name(int kv_dtype, int k_path, int mode, int head_dim, AblationKind ablation, int stage) {
  std::string name = std::string("decode_") + TP_NAME_OF(tp_kv_dtype_names, kv_dtype) + "_" +
                     TP_NAME_OF(tp_k_path_names, k_path) + "_" + TP_NAME_OF(tp_transform_mode_names, mode) + "_d" +
                     std::to_string(head_dim);
  if (ablation == AblationKind::load_only) return name + "_load_only";
  if (ablation != AblationKind::none)
    name += std::string("_") + ablation_label(ablation) + "_" + TP_NAME_OF(tp_stage_names, stage);
  return name;
}

std::string decode_symbol_prefix(int kv_dtype, int k_path, int mode, int head_dim, int ablation, int stage) {
  return "_ZN8tilepath3hip7kernels23decode_attention_kernelI" + int_argument(kv_dtype) + int_argument(k_path) +
         int_argument(mode) + int_argument(head_dim) + int_argument(ablation) + int_argument(stage) + "E";
}

std::string combine_symbol_prefix(int head_dim) {
  return "_ZN8tilepath3hip7kernels14combine_kernelI" + int_argument(head_dim) + "E";
}

}  // namespace tilepath::hip
