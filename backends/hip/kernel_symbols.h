#pragma once
// Names of the HIP kernels: the readable variant name stored with a case, and the
// Itanium-mangled symbol the code object's metadata lists, so a variant's record
// (registers, LDS, scratch) can be found without a device.

#include <string>

#include "backends/hip/decode_launch.h"

namespace tilepath::hip {

// e.g. "decode_k8v8_fp8_qk_k_only_d128", "decode_k8v8_fp8_qk_k_only_d128_remove_qk",
// "decode_k8v8_fp8_qk_k_only_d128_load_only".
std::string variant_name(int kv_dtype, int k_path, int mode, int head_dim, AblationKind ablation, int stage);

// The mangled name of tilepath::hip::kernels::decode_attention_kernel<kv, path, mode, d,
// ablation, stage> up to the end of its template arguments.
std::string decode_symbol_prefix(int kv_dtype, int k_path, int mode, int head_dim, int ablation, int stage);

}  // namespace tilepath::hip
