#include "backends/hip/code_object.h"

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

#include "backends/common/elf_image.h"
#include "core/sha256.h"

namespace tilepath::hip {
namespace {

constexpr char kBundleMagic[] = "__CLANG_OFFLOAD_BUNDLE__";
constexpr std::size_t kBundleMagicSize = sizeof(kBundleMagic) - 1;
constexpr std::uint32_t kNoteAmdgpuMetadata = 32;  // NT_AMDGPU_METADATA
constexpr int kMaxWavesPerSimd = 8;                // gfx90a and later
constexpr int kVgprsPerSimdLane = 512;             // unified VGPR + AGPR file
constexpr int kLdsBytesPerCu = 64 * 1024;
constexpr int kSimdsPerCu = 4;
constexpr int kWaveSize = 64;

using elf::read_at;

int int_field(const nlohmann::json& k, const char* name) {
  const auto it = k.find(name);
  return it != k.end() && it->is_number_integer() ? it->get<int>() : -1;
}

std::size_t align4(std::size_t n) { return (n + 3) & ~std::size_t(3); }

}  // namespace

std::vector<CodeObjectKernel> read_kernel_metadata(const std::uint8_t* image, std::size_t size) {
  std::vector<CodeObjectKernel> kernels;
  Elf64_Ehdr eh;
  if (!elf::read_header(image, size, &eh)) return kernels;
  for (int i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!elf::read_section(image, size, eh, i, &sh)) break;
    if (sh.sh_type != SHT_NOTE || !elf::has_bytes_inside(sh, size)) continue;
    std::size_t at = sh.sh_offset;
    const std::size_t end = sh.sh_offset + sh.sh_size;
    while (at + sizeof(Elf64_Nhdr) <= end) {
      Elf64_Nhdr note;
      read_at(image, size, at, &note);
      const std::size_t name_at = at + sizeof(Elf64_Nhdr);
      const std::size_t desc_at = name_at + align4(note.n_namesz);
      if (desc_at + note.n_descsz > end) break;
      const std::string_view name(reinterpret_cast<const char*>(image + name_at),
                                  note.n_namesz ? note.n_namesz - 1 : 0);
      if (note.n_type == kNoteAmdgpuMetadata && name == "AMDGPU") {
        const auto meta = nlohmann::json::from_msgpack(image + desc_at, image + desc_at + note.n_descsz, true, false);
        const auto list = meta.find("amdhsa.kernels");
        if (!meta.is_discarded() && list != meta.end() && list->is_array()) {
          for (const auto& k : *list) {
            CodeObjectKernel r;
            r.symbol = k.value(".name", "");
            r.vgprs = int_field(k, ".vgpr_count");
            r.agprs = int_field(k, ".agpr_count");
            r.sgprs = int_field(k, ".sgpr_count");
            r.vgpr_spills = int_field(k, ".vgpr_spill_count");
            r.sgpr_spills = int_field(k, ".sgpr_spill_count");
            r.lds_bytes = int_field(k, ".group_segment_fixed_size");
            r.scratch_bytes = int_field(k, ".private_segment_fixed_size");
            r.max_workgroup_size = int_field(k, ".max_flat_workgroup_size");
            r.wavefront_size = int_field(k, ".wavefront_size");
            kernels.push_back(std::move(r));
          }
        }
      }
      at = desc_at + align4(note.n_descsz);
    }
  }
  return kernels;
}

std::vector<CodeObject> parse_hip_fatbin(const std::uint8_t* data, std::size_t size) {
  std::vector<CodeObject> objects;
  // Bundles start 8-byte aligned (in practice at the 4 KiB section alignment of each object).
  for (std::size_t base = 0; base + kBundleMagicSize + 8 <= size; base += 8) {
    if (std::memcmp(data + base, kBundleMagic, kBundleMagicSize) != 0) continue;
    std::uint64_t entries = 0;
    read_at(data, size, base + kBundleMagicSize, &entries);
    std::size_t at = base + kBundleMagicSize + 8;
    std::size_t bundle_end = at;
    for (std::uint64_t e = 0; e < entries; ++e) {
      std::uint64_t offset = 0, bytes = 0, triple_size = 0;
      if (!read_at(data, size, at, &offset) || !read_at(data, size, at + 8, &bytes) ||
          !read_at(data, size, at + 16, &triple_size) || at + 24 + triple_size > size)
        break;
      std::string triple(reinterpret_cast<const char*>(data + at + 24), triple_size);
      at += 24 + triple_size;
      if (base + offset + bytes > size) break;
      bundle_end = std::max<std::size_t>(bundle_end, base + offset + bytes);
      if (triple.find("amdgcn") == std::string::npos || bytes == 0) continue;  // the host entry is empty
      CodeObject object;
      object.target = std::move(triple);
      object.elf.assign(data + base + offset, data + base + offset + bytes);
      object.sha256 = sha256_hex(object.elf.data(), object.elf.size());
      object.kernels = read_kernel_metadata(object.elf.data(), object.elf.size());
      objects.push_back(std::move(object));
    }
    // continue at the first 8-byte boundary after this bundle (the loop adds the 8)
    if (bundle_end > base + 8) base = ((bundle_end + 7) & ~std::size_t(7)) - 8;
  }
  return objects;
}

CodeObjectScan scan_hip_code_objects(const std::string& host_binary_path) {
  CodeObjectScan scan;
  scan.file = host_binary_path;
  const elf::NamedSections fatbins = elf::find_named_sections(host_binary_path, ".hip_fatbin");
  scan.error = fatbins.error;
  for (const auto& section : fatbins.sections) {
    auto found = parse_hip_fatbin(fatbins.file.data() + section.offset, section.size);
    for (auto& o : found) scan.objects.push_back(std::move(o));
  }
  if (scan.error.empty() && scan.objects.empty())
    scan.error = host_binary_path + " has no .hip_fatbin section with amdgcn code objects";
  return scan;
}

const CodeObjectKernel* find_kernel(const CodeObjectScan& scan, std::string_view symbol_prefix,
                                    const CodeObject** object) {
  for (const CodeObject& o : scan.objects) {
    for (const CodeObjectKernel& k : o.kernels) {
      if (std::string_view(k.symbol).substr(0, symbol_prefix.size()) == symbol_prefix) {
        if (object != nullptr) *object = &o;
        return &k;
      }
    }
  }
  return nullptr;
}

int waves_per_simd(const CodeObjectKernel& kernel, int workgroup_threads) {
  if (kernel.vgprs < 0 || kernel.agprs < 0 || kernel.lds_bytes < 0 || workgroup_threads <= 0) return -1;
  const int allocated = std::max(8, (kernel.vgprs + 7) / 8 * 8);  // unified: AGPRs included
  int waves = std::min(kMaxWavesPerSimd, kVgprsPerSimdLane / allocated);
  if (kernel.lds_bytes > 0) {
    const int workgroups_per_cu = kLdsBytesPerCu / kernel.lds_bytes;
    const int waves_per_workgroup = (workgroup_threads + kWaveSize - 1) / kWaveSize;
    waves = std::min(waves, workgroups_per_cu * waves_per_workgroup / kSimdsPerCu);
  }
  return waves;
}

}  // namespace tilepath::hip
