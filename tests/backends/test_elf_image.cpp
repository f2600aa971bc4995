// backends/common/elf_image.h: how the backends find their device code in a host binary.
// The test binary itself is the well-formed ELF; hand-made files are the broken ones.
#include "backends/common/elf_image.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace tilepath;
namespace fs = std::filesystem;

namespace {

class ElfImageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tilepath_elf_image_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::vector<std::uint8_t>& bytes) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    return path.string();
  }

  // An ELF of a header, a section-name table and one section ".payload" holding "abcd",
  // whose header says it is payload_size bytes long.
  static std::vector<std::uint8_t> one_section_elf(std::uint64_t payload_size) {
    std::vector<std::uint8_t> bytes(512, 0);
    Elf64_Ehdr eh{};
    std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_shoff = 256;
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = 3;
    eh.e_shstrndx = 1;
    std::memcpy(bytes.data(), &eh, sizeof eh);
    const char names[] = "\0.shstrtab\0.payload";
    std::memcpy(bytes.data() + 128, names, sizeof names);
    std::memcpy(bytes.data() + 192, "abcd", 4);
    Elf64_Shdr sh[3] = {};
    sh[1].sh_name = 1;
    sh[1].sh_type = SHT_STRTAB;
    sh[1].sh_offset = 128;
    sh[1].sh_size = sizeof names;
    sh[2].sh_name = 11;
    sh[2].sh_type = SHT_PROGBITS;
    sh[2].sh_offset = 192;
    sh[2].sh_size = payload_size;
    std::memcpy(bytes.data() + 256, sh, sizeof sh);
    return bytes;
  }

  fs::path dir_;
};

TEST_F(ElfImageTest, FindsTheSectionsOfTheRunningBinaryByName) {
  const elf::NamedSections text = elf::find_named_sections("/proc/self/exe", ".text");
  EXPECT_EQ(text.error, "");
  ASSERT_EQ(text.sections.size(), 1u);
  EXPECT_GT(text.sections[0].size, 0u);
  EXPECT_LE(text.sections[0].offset + text.sections[0].size, text.file.size());

  const elf::NamedSections none = elf::find_named_sections("/proc/self/exe", ".no_such_section");
  EXPECT_EQ(none.error, "") << "a missing section is not an error: the caller says what it expected";
  EXPECT_TRUE(none.sections.empty());
}

TEST_F(ElfImageTest, ReturnsTheBytesOfAHandMadeSection) {
  const std::string path = write("good.elf", one_section_elf(4));
  const elf::NamedSections found = elf::find_named_sections(path, ".payload");
  ASSERT_EQ(found.error, "");
  ASSERT_EQ(found.sections.size(), 1u);
  EXPECT_EQ(
      std::string(reinterpret_cast<const char*>(found.file.data() + found.sections[0].offset), found.sections[0].size),
      "abcd");
  EXPECT_TRUE(elf::find_named_sections(path, ".payloa").sections.empty()) << "names match whole";
}

TEST_F(ElfImageTest, SkipsASectionThatRunsPastTheEndOfTheFile) {
  const std::string path = write("long.elf", one_section_elf(4096));
  const elf::NamedSections found = elf::find_named_sections(path, ".payload");
  EXPECT_EQ(found.error, "");
  EXPECT_TRUE(found.sections.empty());
}

TEST_F(ElfImageTest, NamesAFileItCannotReadOrThatIsNotElf) {
  const std::string missing = (dir_ / "missing").string();
  EXPECT_EQ(elf::find_named_sections(missing, ".text").error, "cannot open " + missing);

  const std::string text = write("text.txt", {'h', 'e', 'l', 'l', 'o'});
  EXPECT_EQ(elf::find_named_sections(text, ".text").error, text + " is not an ELF file");

  std::vector<std::uint8_t> cut = one_section_elf(4);
  cut.resize(300);  // the section headers start at 256 and need 192 bytes
  const std::string truncated = write("cut.elf", cut);
  EXPECT_EQ(elf::find_named_sections(truncated, ".payload").error, truncated + ": bad section header table");
}

TEST(ElfReadAt, RefusesToReadPastTheEnd) {
  const std::uint8_t bytes[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  std::uint32_t value = 0;
  EXPECT_TRUE(elf::read_at(bytes, sizeof bytes, 4, &value));
  EXPECT_EQ(value & 0xFF, 5u);
  EXPECT_FALSE(elf::read_at(bytes, sizeof bytes, 5, &value));
  EXPECT_FALSE(elf::read_at(bytes, sizeof bytes, std::size_t(-2), &value)) << "an offset near the top wraps no sum";
}

}  // namespace
