#pragma once
// The gfx942 code objects (AMDGPU ELF images) that clang embedded in a host binary, with
// the SHA-256 of each and every kernel's resource record from its metadata note. Host
// code only: it reads files and needs no HIP runtime or device.
//
// Where they are: every .hip object carries a clang offload bundle
// ("__CLANG_OFFLOAD_BUNDLE__", one entry per target) in its `.hip_fatbin` section, and the
// linker concatenates them in the binary's `.hip_fatbin`. Each hipv4-amdgcn-amd-amdhsa
// entry is a code object; its NT_AMDGPU_METADATA note (MessagePack, read with
// nlohmann::json::from_msgpack) lists the kernels with .vgpr_count, .agpr_count,
// .group_segment_fixed_size (LDS) and .private_segment_fixed_size (scratch).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tilepath::hip {

struct CodeObjectKernel {
  std::string symbol;  // mangled kernel name (.name)
  // .vgpr_count: on gfx90a and later the unified total per lane, architectural VGPRs
  // (rounded to 4) plus AGPRs; .agpr_count: the AGPRs among them.
  int vgprs = -1, agprs = -1, sgprs = -1;
  int vgpr_spills = -1, sgpr_spills = -1;
  int lds_bytes = -1;      // .group_segment_fixed_size
  int scratch_bytes = -1;  // .private_segment_fixed_size, per work-item
  int max_workgroup_size = -1;
  int wavefront_size = -1;
};

struct CodeObject {
  std::string target;  // the bundle entry's triple, e.g. "hipv4-amdgcn-amd-amdhsa--gfx942"
  std::vector<std::uint8_t> elf;
  std::string sha256;
  std::vector<CodeObjectKernel> kernels;
};

struct CodeObjectScan {
  std::string file;
  std::vector<CodeObject> objects;
  std::string error;  // "" on success; else why nothing was found
};

// The code objects of every offload bundle in a `.hip_fatbin` section's bytes.
std::vector<CodeObject> parse_hip_fatbin(const std::uint8_t* data, std::size_t size);
// The kernels listed in a code object's metadata note (empty when it has none).
std::vector<CodeObjectKernel> read_kernel_metadata(const std::uint8_t* elf, std::size_t size);

// Scan an ELF host binary (executable or shared object) for its `.hip_fatbin` section.
CodeObjectScan scan_hip_code_objects(const std::string& host_binary_path);

// The kernel whose mangled name starts with symbol_prefix, and its code object; nullptr
// when none does.
const CodeObjectKernel* find_kernel(const CodeObjectScan& scan, std::string_view symbol_prefix,
                                    const CodeObject** object = nullptr);

// Architectural VGPRs of a kernel: the unified count less its AGPRs.
inline int arch_vgprs(const CodeObjectKernel& k) { return k.vgprs < 0 || k.agprs < 0 ? -1 : k.vgprs - k.agprs; }

// Waves per SIMD a kernel can keep resident on gfx942 (CDNA 3): at most 8; 512 unified
// VGPRs per SIMD lane, a wave taking its unified count rounded to 8; 64 KiB of LDS per CU shared by the workgroups
// there, a workgroup's waves spread over the CU's 4 SIMDs. -1 when the record lacks the counts.
int waves_per_simd(const CodeObjectKernel& kernel, int workgroup_threads);

}  // namespace tilepath::hip
