#include "backends/hip/kernel_records.h"

#include <dlfcn.h>

#include <cstring>

#include "backends/hip/code_object.h"
#include "backends/hip/decode_launch.h"

namespace tilepath::hip {
namespace {

KernelRecord record_of(const CodeObjectScan& scan, const std::string& name, const std::string& prefix, int threads) {
  KernelRecord r;
  r.name = name;
  r.threads = threads;
  const CodeObject* object = nullptr;
  const CodeObjectKernel* k = scan.error.empty() ? find_kernel(scan, prefix, &object) : nullptr;
  if (k == nullptr) {
    r.note = scan.error.empty() ? "no embedded code object defines " + prefix : scan.error;
    return r;
  }
  r.symbol = k->symbol;
  r.code_object_sha256 = object->sha256;
  r.vgprs = arch_vgprs(*k);
  r.agprs = k->agprs;
  r.sgprs = k->sgprs;
  r.lds_bytes = k->lds_bytes;
  r.scratch_bytes = k->scratch_bytes;
  r.waves_per_simd = waves_per_simd(*k, threads);
  r.note = "metadata of the " + object->target + " code object in .hip_fatbin of " + scan.file;
  return r;
}

}  // namespace

std::string path_of_this_binary() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&path_of_this_binary), &info) == 0 || !info.dli_fname ||
      std::strchr(info.dli_fname, '/') == nullptr) {
    return "/proc/self/exe";
  }
  return info.dli_fname;
}

const std::vector<KernelRecord>& kernel_records() {
  static const std::vector<KernelRecord> records = [] {
    const CodeObjectScan scan = scan_hip_code_objects(path_of_this_binary());
    std::vector<KernelRecord> out;
    for (const VariantInfo& v : decode_variants()) {
      KernelRecord r = record_of(scan, v.name, v.symbol_prefix, v.threads);
      r.target_waves_per_simd = v.target_waves_per_simd;
      r.fp8_qk_mfma = v.fp8_qk_mfma;
      r.fp8_pv_mfma = v.fp8_pv_mfma;
      r.bf16_mfma = v.bf16_mfma;
      out.push_back(std::move(r));
    }
    for (int d : {64, 128, 256}) {
      KernelRecord r = record_of(scan, "combine_d" + std::to_string(d), combine_symbol_prefix(d), 64);
      r.target_waves_per_simd = 8;
      out.push_back(std::move(r));
    }
    return out;
  }();
  return records;
}

const KernelRecord* find_kernel_record(const std::string& name) {
  for (const KernelRecord& r : kernel_records())
    if (r.name == name) return &r;
  return nullptr;
}

}  // namespace tilepath::hip
