#pragma once
// The record of every compiled HIP kernel, read from the code objects embedded in this
// binary (no device needed): the variant's name, its code object's SHA-256, VGPRs, AGPRs,
// LDS, scratch, and the waves per SIMD those allow against the occupancy it targets.

#include <string>
#include <vector>

namespace tilepath::hip {

struct KernelRecord {
  std::string name;    // variant name, e.g. "decode_k8v8_fp8_qk_k_only_d128" or "combine_d128"
  std::string symbol;  // mangled kernel symbol ("" when not found)
  std::string code_object_sha256;
  std::string note;  // where the record came from, or why it is missing
  int vgprs = -1;    // architectural VGPRs per lane
  int agprs = -1;    // accumulation VGPRs per lane (the unified file holds both: vgprs + agprs <= 512)
  int sgprs = -1, lds_bytes = -1, scratch_bytes = -1;
  int threads = 0;
  int waves_per_simd = -1;        // what the registers and LDS allow (code_object.h)
  int target_waves_per_simd = 0;  // what the kernel is built for
  bool fp8_qk_mfma = false, fp8_pv_mfma = false, bf16_mfma = false;
};

// Every main-kernel variant, then the combine kernels (computed once, thread-safe).
const std::vector<KernelRecord>& kernel_records();
// The record named `name`, or nullptr.
const KernelRecord* find_kernel_record(const std::string& name);

// Path of the binary that contains this code (the plugin .so, or a test executable).
std::string path_of_this_binary();

}  // namespace tilepath::hip
