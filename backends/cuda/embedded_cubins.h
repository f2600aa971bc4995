#pragma once
// The cubins (device ELF images) that nvcc embedded in a host binary, with the
// SHA-256 of each and the kernel symbols it defines.
//
// How the hash is obtained: every .cu object carries a fatbin in its
// `.nv_fatbin` section; the linker concatenates them in the plugin's
// `.nv_fatbin` section. We read our own file (found with dladdr), walk the
// fatbin containers (magic 0xBA55ED50) and their entries, keep the ELF entries
// (kind 2; we build with --compress-mode=none so the payload is the cubin
// itself), cut each to its ELF size and hash those bytes. A kernel's cubin is
// the one whose symbol table defines the kernel's mangled name
// (cudaFuncGetName gives the name at run time).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tilepath::cuda {

struct EmbeddedCubin {
  int sm = 0;                          // e.g. 90 (from the fatbin entry header)
  bool compressed = false;             // payload compressed: no hash, no symbols
  std::size_t size_bytes = 0;          // ELF size
  std::string sha256;                  // hex, "" when compressed
  std::vector<std::string> functions;  // FUNC symbols (mangled kernel and device function names)
};

struct CubinScan {
  std::string file;  // the host binary that was read
  std::vector<EmbeddedCubin> cubins;
  std::string error;  // "" on success; else why nothing was found
};

// Scan an ELF host binary (executable or shared object).
CubinScan scan_embedded_cubins(const std::string& host_binary_path);

// Scan a `.nv_fatbin` section's bytes (one or more concatenated fatbin containers).
std::vector<EmbeddedCubin> parse_fatbin_section(const std::uint8_t* data, std::size_t size);

// Path of the binary that contains this code (the plugin .so, or a test executable).
std::string path_of_this_binary();

// Scan of path_of_this_binary(), computed once (thread-safe).
const CubinScan& own_cubins();

// The cubin that defines `mangled_name`, or nullptr.
const EmbeddedCubin* find_cubin_defining(const CubinScan& scan, std::string_view mangled_name);

}  // namespace tilepath::cuda
