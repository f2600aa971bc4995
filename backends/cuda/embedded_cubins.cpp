#include "backends/cuda/embedded_cubins.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>

#include "backends/common/elf_image.h"
#include "core/sha256.h"

namespace tilepath::cuda {
namespace {

constexpr std::uint32_t kFatbinMagic = 0xBA55ED50u;
constexpr std::uint16_t kEntryKindElf = 2;
constexpr std::uint64_t kEntryFlagCompressed = 0x2000;

using elf::read_at;

// Bytes the ELF image really occupies (the fatbin pads payloads).
std::size_t elf_extent(const std::uint8_t* image, std::size_t available) {
  Elf64_Ehdr eh;
  if (!elf::read_header(image, available, &eh)) return 0;
  std::size_t end = std::max<std::size_t>(sizeof(Elf64_Ehdr), eh.e_shoff + std::size_t(eh.e_shnum) * eh.e_shentsize);
  end = std::max<std::size_t>(end, eh.e_phoff + std::size_t(eh.e_phnum) * eh.e_phentsize);
  for (int i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!elf::read_section(image, available, eh, i, &sh)) return 0;
    if (sh.sh_type != SHT_NOBITS) end = std::max<std::size_t>(end, sh.sh_offset + sh.sh_size);
  }
  return end <= available ? end : 0;
}

std::vector<std::string> function_symbols(const std::uint8_t* image, std::size_t size) {
  std::vector<std::string> names;
  Elf64_Ehdr eh;
  if (!elf::read_header(image, size, &eh)) return names;
  for (int i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr symtab;
    if (!elf::read_section(image, size, eh, i, &symtab)) break;
    if (symtab.sh_type != SHT_SYMTAB || symtab.sh_entsize == 0) continue;
    Elf64_Shdr strtab;
    if (!elf::read_section(image, size, eh, symtab.sh_link, &strtab) || !elf::has_bytes_inside(strtab, size)) continue;
    for (std::size_t s = 0; s < symtab.sh_size / symtab.sh_entsize; ++s) {
      Elf64_Sym sym;
      if (!read_at(image, size, symtab.sh_offset + s * symtab.sh_entsize, &sym)) break;
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_name >= strtab.sh_size) continue;
      const char* name = reinterpret_cast<const char*>(image + strtab.sh_offset + sym.st_name);
      names.emplace_back(name, strnlen(name, strtab.sh_size - sym.st_name));
    }
  }
  return names;
}

}  // namespace

std::vector<EmbeddedCubin> parse_fatbin_section(const std::uint8_t* data, std::size_t size) {
  std::vector<EmbeddedCubin> cubins;
  std::size_t offset = 0;
  while (offset + 16 <= size) {
    std::uint32_t magic = 0;
    read_at(data, size, offset, &magic);
    if (magic != kFatbinMagic) {  // containers are 8-byte aligned; skip padding
      offset += 8;
      continue;
    }
    std::uint16_t header_size = 0;
    std::uint64_t fat_size = 0;
    read_at(data, size, offset + 6, &header_size);
    read_at(data, size, offset + 8, &fat_size);
    std::size_t entry = offset + header_size;
    const std::size_t end = std::min<std::size_t>(size, entry + fat_size);
    while (entry + 64 <= end) {
      std::uint16_t kind = 0;
      std::uint32_t entry_header_size = 0, sm = 0;
      std::uint64_t payload_size = 0, flags = 0;
      read_at(data, size, entry, &kind);
      read_at(data, size, entry + 4, &entry_header_size);
      read_at(data, size, entry + 8, &payload_size);
      read_at(data, size, entry + 28, &sm);
      read_at(data, size, entry + 40, &flags);
      if (entry_header_size == 0 || entry + entry_header_size + payload_size > end) break;
      if (kind == kEntryKindElf) {
        EmbeddedCubin cubin;
        cubin.sm = int(sm);
        cubin.compressed = (flags & kEntryFlagCompressed) != 0;
        const std::uint8_t* payload = data + entry + entry_header_size;
        if (!cubin.compressed) {
          cubin.size_bytes = elf_extent(payload, payload_size);
          if (cubin.size_bytes) {
            cubin.sha256 = sha256_hex(payload, cubin.size_bytes);
            cubin.functions = function_symbols(payload, cubin.size_bytes);
          }
        }
        cubins.push_back(std::move(cubin));
      }
      entry += entry_header_size + payload_size;
    }
    offset = std::max(end, offset + 16);
    offset = (offset + 7) & ~std::size_t(7);
  }
  return cubins;
}

CubinScan scan_embedded_cubins(const std::string& host_binary_path) {
  CubinScan scan;
  scan.file = host_binary_path;
  const elf::NamedSections fatbins = elf::find_named_sections(host_binary_path, ".nv_fatbin");
  scan.error = fatbins.error;
  for (const auto& section : fatbins.sections) {
    auto found = parse_fatbin_section(fatbins.file.data() + section.offset, section.size);
    scan.cubins.insert(scan.cubins.end(), found.begin(), found.end());
  }
  if (scan.error.empty() && scan.cubins.empty())
    scan.error = host_binary_path + " has no .nv_fatbin section with cubins";
  return scan;
}

std::string path_of_this_binary() {
  Dl_info info{};
  // For code in the main executable glibc may report argv[0] (possibly not a
  // usable path); /proc/self/exe is then the reliable name.
  if (dladdr(reinterpret_cast<const void*>(&path_of_this_binary), &info) == 0 || !info.dli_fname ||
      std::strchr(info.dli_fname, '/') == nullptr) {
    return "/proc/self/exe";
  }
  return info.dli_fname;
}

const CubinScan& own_cubins() {
  static const CubinScan scan = scan_embedded_cubins(path_of_this_binary());
  return scan;
}

const EmbeddedCubin* find_cubin_defining(const CubinScan& scan, std::string_view mangled_name) {
  for (const auto& cubin : scan.cubins) {
    if (std::find(cubin.functions.begin(), cubin.functions.end(), mangled_name) != cubin.functions.end()) return &cubin;
  }
  return nullptr;
}

}  // namespace tilepath::cuda
