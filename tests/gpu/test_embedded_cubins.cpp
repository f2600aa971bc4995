// The fatbin reader finds the sm_90a cubins nvcc embedded, hashes them and lists
// their kernels (this is where a case's cubin_sha256 comes from).
#include <gtest/gtest.h>

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <vector>

#include "backends/cuda/embedded_cubins.h"
#include "backends/cuda/read_bandwidth.h"
#include "core/sha256.h"
#include "cuda_test_support.h"

using namespace tilepath::cuda;

namespace {

bool defines_function_containing(const EmbeddedCubin& cubin, const std::string& part) {
  return std::any_of(cubin.functions.begin(), cubin.functions.end(),
                     [&](const std::string& f) { return f.find(part) != std::string::npos; });
}

void expect_cubins_with_read_kernel(const CubinScan& scan) {
  ASSERT_TRUE(scan.error.empty()) << scan.error;
  ASSERT_FALSE(scan.cubins.empty());
  bool found_read_kernel = false;
  for (const auto& cubin : scan.cubins) {
    EXPECT_EQ(cubin.sm, 90) << "we build only sm_90a";
    EXPECT_FALSE(cubin.compressed) << "the build passes --compress-mode=none";
    EXPECT_EQ(cubin.sha256.size(), 64u);
    EXPECT_GT(cubin.size_bytes, 64u);
    found_read_kernel = found_read_kernel || defines_function_containing(cubin, "stream_read_kernel");
  }
  EXPECT_TRUE(found_read_kernel);
}

}  // namespace

TEST(EmbeddedCubins, ThisTestBinaryCarriesTheReadBandwidthCubin) {
  // Referencing the launcher through a volatile links read_bandwidth.cu's
  // object (and its fatbin) into this binary.
  auto* volatile launcher = &launch_stream_read;
  ASSERT_NE(reinterpret_cast<const void*>(launcher), nullptr);
  expect_cubins_with_read_kernel(own_cubins());
  const auto* cubin = find_cubin_defining(own_cubins(), "no_such_kernel");
  EXPECT_EQ(cubin, nullptr);
}

TEST(EmbeddedCubins, ThePluginCarriesItsCubins) {
  const std::string plugin = test::cuda_plugin_file();
  ASSERT_TRUE(std::filesystem::exists(plugin)) << plugin;
  expect_cubins_with_read_kernel(scan_embedded_cubins(plugin));
}

TEST(EmbeddedCubins, HashCoversTheElfBytesAndFindsSymbols) {
  // A hand-made fatbin: container header, one ELF entry holding a minimal ELF
  // (header + 3 sections: null, .shstrtab-like strtab, symtab with one FUNC).
  std::vector<std::uint8_t> elf(1024, 0);
  auto* eh = reinterpret_cast<Elf64_Ehdr*>(elf.data());
  std::memcpy(eh->e_ident, ELFMAG, SELFMAG);
  eh->e_ident[EI_CLASS] = ELFCLASS64;
  eh->e_shentsize = sizeof(Elf64_Shdr);
  eh->e_shnum = 3;
  eh->e_shoff = 512;
  const char strtab[] = "\0my_kernel\0";
  std::memcpy(elf.data() + 128, strtab, sizeof(strtab));
  Elf64_Sym syms[2] = {};
  syms[1].st_name = 1;
  syms[1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
  std::memcpy(elf.data() + 256, syms, sizeof(syms));
  Elf64_Shdr sh[3] = {};
  sh[1].sh_type = SHT_STRTAB;
  sh[1].sh_offset = 128;
  sh[1].sh_size = sizeof(strtab);
  sh[2].sh_type = SHT_SYMTAB;
  sh[2].sh_offset = 256;
  sh[2].sh_size = sizeof(syms);
  sh[2].sh_entsize = sizeof(Elf64_Sym);
  sh[2].sh_link = 1;
  std::memcpy(elf.data() + 512, sh, sizeof(sh));
  const std::size_t elf_size = 512 + sizeof(sh);

  const std::size_t padded = 1024;  // the fatbin pads the payload
  std::vector<std::uint8_t> fatbin(16 + 64 + padded, 0);
  const std::uint32_t magic = 0xBA55ED50u;
  const std::uint16_t version = 1, header_size = 16;
  const std::uint64_t fat_size = 64 + padded;
  std::memcpy(fatbin.data(), &magic, 4);
  std::memcpy(fatbin.data() + 4, &version, 2);
  std::memcpy(fatbin.data() + 6, &header_size, 2);
  std::memcpy(fatbin.data() + 8, &fat_size, 8);
  const std::uint16_t kind = 2;
  const std::uint32_t entry_header = 64, sm = 90;
  const std::uint64_t payload = padded;
  std::memcpy(fatbin.data() + 16, &kind, 2);
  std::memcpy(fatbin.data() + 20, &entry_header, 4);
  std::memcpy(fatbin.data() + 24, &payload, 8);
  std::memcpy(fatbin.data() + 16 + 28, &sm, 4);
  std::memcpy(fatbin.data() + 80, elf.data(), elf.size());

  const auto cubins = parse_fatbin_section(fatbin.data(), fatbin.size());
  ASSERT_EQ(cubins.size(), 1u);
  EXPECT_EQ(cubins[0].sm, 90);
  EXPECT_EQ(cubins[0].size_bytes, elf_size);
  EXPECT_EQ(cubins[0].sha256, tilepath::sha256_hex(elf.data(), elf_size));
  ASSERT_EQ(cubins[0].functions.size(), 1u);
  EXPECT_EQ(cubins[0].functions[0], "my_kernel");
}
