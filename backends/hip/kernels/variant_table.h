#pragma once
// The compiled kernel variants, as a table the launcher searches. Each per-dtype
// translation unit (decode_<dtype>*.hip) appends the variants it instantiates, so the
// template instantiations spread over several files that build in parallel.

#include <vector>

#include "backends/hip/decode_launch.h"

namespace tilepath::hip::kernels {

// Launches the main kernel of one variant (combine is launched after it when splits > 1).
using MainLaunchFn = hipError_t (*)(const DecodeArgs& args, int head_chunks, hipStream_t stream);

struct VariantEntry {
  VariantInfo info;
  MainLaunchFn launch;
};

void append_k16v16_variants(std::vector<VariantEntry>& out);
void append_k16v8_variants(std::vector<VariantEntry>& out);
void append_k8v16_variants(std::vector<VariantEntry>& out);
void append_k8v8_transform_variants(std::vector<VariantEntry>& out);
void append_k8v8_fp8qk_variants(std::vector<VariantEntry>& out);

// The table, built once (thread-safe).
const std::vector<VariantEntry>& variant_entries();

}  // namespace tilepath::hip::kernels
