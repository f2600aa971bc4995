#pragma once
// Reading a 64-bit ELF image in memory with every offset checked against its size: the
// backends find their device code in the host binary's sections (.nv_fatbin, .hip_fatbin)
// and read the symbols, notes and extent of each embedded device ELF. Header-only; Qt-free.

#include <elf.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace tilepath::elf {

// Copies a T from data + offset; false where it would read past size.
template <typename T>
bool read_at(const std::uint8_t* data, std::size_t size, std::size_t offset, T* out) {
  if (offset > size || size - offset < sizeof(T)) return false;
  std::memcpy(out, data + offset, sizeof(T));
  return true;
}

// The ELF header, or false where the bytes do not start one.
inline bool read_header(const std::uint8_t* data, std::size_t size, Elf64_Ehdr* out) {
  return read_at(data, size, 0, out) && std::memcmp(out->e_ident, ELFMAG, SELFMAG) == 0;
}

// Section header i, or false where the table runs past the image.
inline bool read_section(const std::uint8_t* data, std::size_t size, const Elf64_Ehdr& eh, std::size_t i,
                         Elf64_Shdr* out) {
  return read_at(data, size, eh.e_shoff + i * eh.e_shentsize, out);
}

// Whether a section's bytes lie inside the image (SHT_NOBITS sections have none).
inline bool has_bytes_inside(const Elf64_Shdr& sh, std::size_t size) {
  return sh.sh_type != SHT_NOBITS && sh.sh_offset <= size && sh.sh_size <= size - sh.sh_offset;
}

// A file read whole and where each section of one name lies in it, in header order.
struct NamedSections {
  struct Range {
    std::size_t offset = 0, size = 0;
  };
  std::vector<std::uint8_t> file;
  std::vector<Range> sections;
  std::string error;  // the file is unreadable or not ELF; "" otherwise, even with no such section
};

inline NamedSections find_named_sections(const std::string& path, std::string_view section_name) {
  NamedSections found;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    found.error = "cannot open " + path;
    return found;
  }
  found.file.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  const std::uint8_t* data = found.file.data();
  const std::size_t size = found.file.size();
  Elf64_Ehdr eh;
  if (!read_header(data, size, &eh)) {
    found.error = path + " is not an ELF file";
    return found;
  }
  Elf64_Shdr names;
  if (!read_section(data, size, eh, eh.e_shstrndx, &names) || !has_bytes_inside(names, size)) {
    found.error = path + ": bad section header table";
    return found;
  }
  for (std::size_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!read_section(data, size, eh, i, &sh)) break;
    if (sh.sh_name >= names.sh_size || !has_bytes_inside(sh, size)) continue;
    const char* name = reinterpret_cast<const char*>(data + names.sh_offset + sh.sh_name);
    if (std::string_view(name, strnlen(name, names.sh_size - sh.sh_name)) != section_name) continue;
    found.sections.push_back({std::size_t(sh.sh_offset), std::size_t(sh.sh_size)});
  }
  return found;
}

}  // namespace tilepath::elf
