// The .npy reader for imported K/V dumps: files written byte by byte here (and by the
// project's own npy_writer), every accepted dtype and version, values checked against
// the formats' definitions, and every refusal checked for naming the file and the problem
// on one line.
#include <gtest/gtest.h>

#include <unistd.h>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/numerics/npy_reader.h"
#include "core/numerics/npy_writer.h"

using namespace tilepath::numerics;

namespace {

// The header dict NumPy writes for a C-order array.
std::string numpy_dict(const std::string& descr, const std::string& shape, bool fortran_order = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran_order ? "True" : "False") + ", 'shape': " + shape +
         ", }";
}

// magic, version, little-endian header length (2 bytes in 1.0, 4 in 2.0/3.0), the dict
// padded with spaces and a newline so the data starts 64-byte aligned, then the data.
std::string npy_bytes(int major, const std::string& dict, const std::string& data, int minor = 0) {
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  const std::size_t prefix = 8 + length_bytes;
  const std::size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  std::string padded = dict + std::string(total - prefix - dict.size() - 1, ' ') + "\n";
  std::string bytes("\x93NUMPY", 6);
  bytes += static_cast<char>(major);
  bytes += static_cast<char>(minor);
  for (std::size_t i = 0; i < length_bytes; ++i) bytes += static_cast<char>((padded.size() >> (8 * i)) & 0xFF);
  return bytes + padded + data;
}

template <typename T>
std::string raw_bytes(const std::vector<T>& values) {
  std::string bytes(values.size() * sizeof(T), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// binary16 by its definition, in double: s eeeee mmmmmmmmmm, bias 15.
double fp16_definition(std::uint16_t code) {
  const int exponent = (code >> 10) & 0x1F, mantissa = code & 0x3FF;
  const double magnitude =
      exponent == 0 ? mantissa * std::pow(2.0, -24) : (1.0 + mantissa / 1024.0) * std::pow(2.0, exponent - 15);
  return (code & 0x8000) ? -magnitude : magnitude;
}

// bfloat16 by its definition, in double: s eeeeeeee mmmmmmm, bias 127.
double bf16_definition(std::uint16_t code) {
  const int exponent = (code >> 7) & 0xFF, mantissa = code & 0x7F;
  const double magnitude =
      exponent == 0 ? mantissa / 128.0 * std::pow(2.0, -126) : (1.0 + mantissa / 128.0) * std::pow(2.0, exponent - 127);
  return (code & 0x8000) ? -magnitude : magnitude;
}

// A value that tells its own index: l*1000 + t*100 + h*10 + d (exact in float).
float index_value(int l, int t, int h, int d) { return static_cast<float>(l * 1000 + t * 100 + h * 10 + d); }

class NpyReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("tilepath_npy_reader_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write_file(const std::string& name, const std::string& bytes) const {
    const std::string path = (dir_ / name).string();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
  }

  // A float32 [layers?, tokens, heads, dim] file of index_value()s.
  std::string write_indexed_f4(const std::string& name, int major, int layers, int tokens, int heads, int dim,
                               bool with_layer_axis) const {
    std::vector<float> values;
    for (int l = 0; l < layers; ++l)
      for (int t = 0; t < tokens; ++t)
        for (int h = 0; h < heads; ++h)
          for (int d = 0; d < dim; ++d) values.push_back(index_value(l, t, h, d));
    std::string shape = "(" + (with_layer_axis ? std::to_string(layers) + ", " : std::string()) +
                        std::to_string(tokens) + ", " + std::to_string(heads) + ", " + std::to_string(dim) + ")";
    return write_file(name, npy_bytes(major, numpy_dict("<f4", shape), raw_bytes(values)));
  }

  // The call must throw NpyError whose one-line message names the file and holds every part.
  static void expect_error(const std::function<void()>& call, const std::string& path,
                           std::initializer_list<std::string> parts) {
    try {
      call();
      ADD_FAILURE() << path << ": no error";
    } catch (const NpyError& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
      EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << "starts with the file: " << message;
      for (const auto& part : parts)
        EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' in: " << message;
    }
  }

  static std::function<void()> kv(const std::string& path, NpyElementType type = NpyElementType::float32) {
    return [path, type] { read_npy_kv(path, type); };
  }

  std::filesystem::path dir_;
};

}  // namespace

TEST_F(NpyReaderTest, ReadsAFloat32FileFromTheProjectsOwnWriter) {
  std::vector<float> values;
  for (int t = 0; t < 5; ++t)
    for (int h = 0; h < 2; ++h)
      for (int d = 0; d < 16; ++d) values.push_back(index_value(0, t, h, d) * 0.1f);
  const std::string path = (dir_ / "k.npy").string();
  write_npy(path, "<f4", 4, {5, 2, 16}, values.data(), values.size() * sizeof(float));
  const NpyKvTensor k = read_npy_kv(path, NpyElementType::float32);
  EXPECT_EQ(k.layers, 1);
  EXPECT_EQ(k.tokens, 5);
  EXPECT_EQ(k.kv_heads, 2);
  EXPECT_EQ(k.head_dim, 16);
  EXPECT_EQ(k.file_rank, 3);
  ASSERT_EQ(k.data.size(), values.size());
  EXPECT_EQ(std::memcmp(k.data.data(), values.data(), values.size() * sizeof(float)), 0);
  EXPECT_EQ(k.at(0, 3, 1, 7), index_value(0, 3, 1, 7) * 0.1f);
}

TEST_F(NpyReaderTest, ReadsVersions1And2And3Alike) {
  for (const int major : {1, 2, 3}) {
    const std::string path = write_indexed_f4("v" + std::to_string(major) + ".npy", major, 2, 3, 2, 4, true);
    const NpyHeader header = read_npy_header(path);
    EXPECT_EQ(header.major_version, major);
    EXPECT_EQ(header.minor_version, 0);
    EXPECT_EQ(header.descr, "<f4");
    EXPECT_FALSE(header.fortran_order);
    EXPECT_EQ(header.shape, (std::vector<std::uint64_t>{2, 3, 2, 4}));
    EXPECT_EQ(header.data_offset % 64, 0u);
    EXPECT_EQ(header.data_offset + 2 * 3 * 2 * 4 * 4, std::filesystem::file_size(path));
    const NpyKvTensor k = read_npy_kv(path, NpyElementType::float32);
    for (int l = 0; l < 2; ++l)
      for (int t = 0; t < 3; ++t)
        for (int h = 0; h < 2; ++h)
          for (int d = 0; d < 4; ++d) ASSERT_EQ(k.at(l, t, h, d), index_value(l, t, h, d)) << "v" << major;
  }
}

TEST_F(NpyReaderTest, Float16ConvertsSpecialsAndSubnormalsExactly) {
  const std::vector<std::uint16_t> codes = {
      0x0000, 0x8000,          // +0, -0
      0x0001, 0x8001, 0x03FF,  // subnormals: 2^-24, -2^-24, 1023 * 2^-24
      0x0400, 0x3C00, 0x3C01,  // smallest normal, 1, 1 + 2^-10
      0x3555, 0xC000, 0x7BFF,  // ~1/3, -2, 65504
      0xFBFF,                  // -65504
  };
  const std::string path = write_file("f16.npy", npy_bytes(1, numpy_dict("<f2", "(2, 2, 3)"), raw_bytes(codes)));
  const NpyKvTensor k = read_npy_kv(path, NpyElementType::float16);
  ASSERT_EQ(k.data.size(), codes.size());
  for (std::size_t i = 0; i < codes.size(); ++i) {
    EXPECT_EQ(static_cast<double>(k.data[i]), fp16_definition(codes[i])) << std::hex << codes[i];
    EXPECT_EQ(std::signbit(k.data[i]), (codes[i] & 0x8000) != 0) << std::hex << codes[i];
  }
}

TEST_F(NpyReaderTest, Bfloat16IsAcceptedUnderEveryRawTwoByteDescr) {
  const std::vector<std::uint16_t> codes = {
      0x3F80, 0xBF80, 0x8000, 0x0000,  // 1, -1, -0, +0
      0x0001, 0x007F, 0x0080, 0x4049,  // smallest subnormal 2^-133, largest subnormal, 2^-126, 3.140625
      0x7F7F, 0xFF7F, 0x3EAB, 0xC2F7,  // largest finite, its negative, ~1/3, -123.5
  };
  for (const char* descr : {"<u2", "<i2", "|V2", "<V2"}) {
    const std::string path = write_file("bf16.npy", npy_bytes(2, numpy_dict(descr, "(3, 1, 4)"), raw_bytes(codes)));
    const NpyKvTensor k = read_npy_kv(path, NpyElementType::bfloat16);
    EXPECT_EQ(k.tokens, 3);
    EXPECT_EQ(k.kv_heads, 1);
    EXPECT_EQ(k.head_dim, 4);
    ASSERT_EQ(k.data.size(), codes.size());
    for (std::size_t i = 0; i < codes.size(); ++i) {
      EXPECT_EQ(static_cast<double>(k.data[i]), bf16_definition(codes[i])) << descr << " 0x" << std::hex << codes[i];
      EXPECT_EQ(std::signbit(k.data[i]), (codes[i] & 0x8000) != 0) << descr;
    }
  }
}

TEST_F(NpyReaderTest, FourDimensionalFileSelectsLayers) {
  const std::string path = write_indexed_f4("layers.npy", 1, 3, 4, 2, 8, true);
  const NpyKvTensor k = read_npy_kv(path, NpyElementType::float32);
  EXPECT_EQ(k.layers, 3);
  EXPECT_EQ(k.tokens, 4);
  EXPECT_EQ(k.kv_heads, 2);
  EXPECT_EQ(k.head_dim, 8);
  EXPECT_EQ(k.file_rank, 4);
  EXPECT_EQ(k.layer_size(), 4u * 2 * 8);
  for (int l = 0; l < 3; ++l) {
    const auto layer = k.layer(l);
    ASSERT_EQ(layer.size(), k.layer_size());
    for (int t = 0; t < 4; ++t)
      for (int h = 0; h < 2; ++h)
        for (int d = 0; d < 8; ++d) {
          const auto i = static_cast<std::size_t>((t * 2 + h) * 8 + d);
          ASSERT_EQ(layer[i], index_value(l, t, h, d)) << l << " " << t << " " << h << " " << d;
          ASSERT_EQ(k.at(l, t, h, d), index_value(l, t, h, d));
        }
  }
  EXPECT_THROW(k.layer(3), std::out_of_range);
  EXPECT_THROW(k.layer(-1), std::out_of_range);
  EXPECT_THROW(k.at(0, 4, 0, 0), std::out_of_range);
  EXPECT_THROW(k.at(0, 0, 0, 8), std::out_of_range);
}

TEST_F(NpyReaderTest, BiasOfRank2And3) {
  const std::vector<float> two = {0.5f, -1.0f, 2.0f, 3.25f, -4.0f, 5.5f};  // [2 heads][3 dims]
  const std::string path2 = write_file("bias2.npy", npy_bytes(1, numpy_dict("<f4", "(2, 3)"), raw_bytes(two)));
  const NpyKvBias b2 = read_npy_kv_bias(path2, NpyElementType::float32);
  EXPECT_EQ(b2.layers, 1);
  EXPECT_EQ(b2.kv_heads, 2);
  EXPECT_EQ(b2.head_dim, 3);
  EXPECT_EQ(b2.file_rank, 2);
  for (int h = 0; h < 2; ++h)
    for (int d = 0; d < 3; ++d) EXPECT_EQ(b2.at(0, h, d), two[static_cast<std::size_t>(h * 3 + d)]);

  std::vector<std::uint16_t> three;  // [4 layers][2 heads][3 dims] of bf16 integers l*10 + h*3 + d
  for (int l = 0; l < 4; ++l)
    for (int h = 0; h < 2; ++h)
      for (int d = 0; d < 3; ++d) {
        const float value = static_cast<float>(l * 10 + h * 3 + d);
        three.push_back(static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(value) >> 16));  // exact: small ints
      }
  const std::string path3 = write_file("bias3.npy", npy_bytes(3, numpy_dict("<i2", "(4, 2, 3)"), raw_bytes(three)));
  const NpyKvBias b3 = read_npy_kv_bias(path3, NpyElementType::bfloat16);
  EXPECT_EQ(b3.layers, 4);
  EXPECT_EQ(b3.file_rank, 3);
  for (int l = 0; l < 4; ++l) {
    ASSERT_EQ(b3.layer(l).size(), 6u);
    for (int h = 0; h < 2; ++h)
      for (int d = 0; d < 3; ++d) {
        EXPECT_EQ(b3.at(l, h, d), static_cast<float>(l * 10 + h * 3 + d));
        EXPECT_EQ(b3.layer(l)[static_cast<std::size_t>(h * 3 + d)], static_cast<float>(l * 10 + h * 3 + d));
      }
  }
  EXPECT_THROW(b3.layer(4), std::out_of_range);

  const std::string kv_shaped = write_indexed_f4("bias_rank4.npy", 1, 2, 3, 2, 4, true);
  expect_error(
      [&] { read_npy_kv_bias(kv_shaped, NpyElementType::float32); }, kv_shaped,
      {"wrong rank", "(2, 3, 2, 4)", "rank 4", "rank 2 [kv_heads, head_dim]", "rank 3 [layers, kv_heads, head_dim]"});
}

TEST_F(NpyReaderTest, HeaderSyntaxNumPyAllows) {
  const std::vector<float> values = {1, 2, 3, 4, 5, 6};
  const std::string data = raw_bytes(values);
  const std::vector<std::string> dicts = {
      "{'shape': (1, 2, 3), 'fortran_order': False, 'descr': '<f4'}",          // another key order, no trailing comma
      "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (1, 2, 3)}",  // double quotes
      "{ 'descr' : '<f4' ,\t'fortran_order':False,'shape':( 1 , 2 , 3 , ) , }",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1L, 2L, 3L), }",  // Python 2's long literals
      "{'descr': '<f4', 'fortran_order': False, 'shape': ((1), 2, 3), }",   // (1) is just 1
  };
  for (std::size_t i = 0; i < dicts.size(); ++i) {
    const std::string path = write_file("syntax" + std::to_string(i) + ".npy", npy_bytes(1, dicts[i], data));
    const NpyKvTensor k = read_npy_kv(path, NpyElementType::float32);
    EXPECT_EQ(k.tokens, 1) << dicts[i];
    EXPECT_EQ(k.kv_heads, 2) << dicts[i];
    EXPECT_EQ(k.head_dim, 3) << dicts[i];
    EXPECT_EQ(k.data, values) << dicts[i];
  }
}

TEST_F(NpyReaderTest, RefusesAFileThatIsNotNpy) {
  const std::string zip = write_file("archive.npz", std::string("PK\x03\x04", 4) + std::string(100, '\0'));
  expect_error(kv(zip), zip, {"not an .npy file", "\\x93NUMPY"});
  const std::string empty = write_file("empty.npy", "");
  expect_error(kv(empty), empty, {"not an .npy file"});
  const std::string text = write_file("text.npy", "tokens,heads\n1,2\n");
  expect_error(kv(text), text, {"not an .npy file"});
  const std::string missing = (dir_ / "missing.npy").string();
  expect_error(kv(missing), missing, {"cannot open"});
}

TEST_F(NpyReaderTest, RefusesUnsupportedVersions) {
  const std::string data = raw_bytes(std::vector<float>(8, 1.0f));
  for (const auto& [major, minor] : std::vector<std::pair<int, int>>{{4, 0}, {0, 0}, {1, 1}, {2, 5}}) {
    const std::string version = std::to_string(major) + "." + std::to_string(minor);
    const std::string path =
        write_file("v" + version + ".npy", npy_bytes(major, numpy_dict("<f4", "(2, 2, 2)"), data, minor));
    expect_error(kv(path), path, {"unsupported .npy format version " + version, "1.0, 2.0 and 3.0"});
  }
}

TEST_F(NpyReaderTest, RefusesMalformedHeaders) {
  const std::string data = raw_bytes(std::vector<float>(8, 1.0f));
  struct Case {
    std::string dict;
    std::string problem;
  };
  const std::vector<Case> cases = {
      {"{'descr': '<f4', 'shape': (2, 2, 2), }", "no 'fortran_order' key"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 2), 'descr': '<f4'}", "'descr' appears twice"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 2), 'extra': 1}", "unexpected key 'extra'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (8), }", "'shape' is 8, not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2, 2, 2], }", "not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, '2', 2), }", "'2' is not a non-negative integer"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, -2, 2), }", "expected a value, found '-'"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 2, 2), }", "'fortran_order' is 0, not True or False"},
      {"{'descr': 4, 'fortran_order': False, 'shape': (2, 2, 2), }", "'descr' is 4, not a dtype string"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (2, 2, 2), }", "expected ':' after the key 'descr'"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (2, 2, 2), }", "expected '}' after a dict value, found 'f'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 2), 'x': 'unterminated}",
       "a string runs past the end of the line"},
      {"{'descr': '<f4', 'fortran_order': None, 'shape': (2, 2, 2), }", "unexpected name 'None'"},
      {"{'descr': '<f\\x34', 'fortran_order': False, 'shape': (2, 2, 2), }", "escape sequences"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 2), } x", "after the closing '}'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 2), ", "end of the header"},
      {"['descr', '<f4']", "expected '{'"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (2, 2, 2)}", "expected '}' after a dict value"},
      {"{1: '<f4', 'fortran_order': False, 'shape': (2, 2, 2)}", "a dict key is not a string: 1"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string path = write_file("malformed" + std::to_string(i) + ".npy", npy_bytes(1, cases[i].dict, data));
    expect_error(kv(path), path, {"malformed header", cases[i].problem});
  }

  // A header length that runs past the end of the file, and a file that ends inside the length field.
  std::string long_header = npy_bytes(1, numpy_dict("<f4", "(2, 2, 2)"), "");
  long_header[8] = '\xFF';
  long_header[9] = '\x7F';
  const std::string past_end = write_file("past_end.npy", long_header);
  expect_error(kv(past_end), past_end, {"malformed header", "says 32767 bytes", "ends after"});
  const std::string cut = write_file("cut.npy", std::string("\x93NUMPY\x02\x00\x10", 9));
  expect_error(kv(cut), cut, {"malformed header", "header length field"});
  // Without NumPy's padding, a string can also run into the end of the header.
  const std::string unpadded_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 2), 'x': 'open";
  std::string unpadded("\x93NUMPY\x01\x00", 8);
  unpadded += static_cast<char>(unpadded_dict.size());
  unpadded += '\0';
  const std::string unterminated = write_file("unterminated.npy", unpadded + unpadded_dict);
  expect_error(kv(unterminated), unterminated, {"malformed header", "a string has no closing quote"});
  // A control byte from the header is escaped, so the message stays on one line.
  const std::string newline = write_file(
      "newline.npy", npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 2), }\n\n\x01", data));
  expect_error(kv(newline), newline, {"malformed header", "'\\x01'"});
}

TEST_F(NpyReaderTest, RefusesTheWrongDtypeNamingWhatWasFoundAndWhatIsAccepted) {
  const std::string f8 = write_file("f8.npy", npy_bytes(1, numpy_dict("<f8", "(2, 2, 2)"), std::string(64, '\0')));
  expect_error(kv(f8, NpyElementType::float32), f8, {"wrong dtype", "found '<f8'", "accepted for float32: '<f4'"});
  const std::string f4 = write_file("f4.npy", npy_bytes(1, numpy_dict("<f4", "(2, 2, 2)"), std::string(32, '\0')));
  expect_error(kv(f4, NpyElementType::float16), f4, {"wrong dtype", "found '<f4'", "accepted for float16: '<f2'"});
  expect_error(kv(f4, NpyElementType::bfloat16), f4,
               {"wrong dtype", "found '<f4'", "accepted for bfloat16: '<u2', '<i2', '|V2' or '<V2'"});
  const std::string f2 = write_file("f2.npy", npy_bytes(1, numpy_dict("<f2", "(2, 2, 2)"), std::string(16, '\0')));
  expect_error(kv(f2, NpyElementType::bfloat16), f2, {"wrong dtype", "found '<f2'"});
  expect_error(kv(f2, NpyElementType::float32), f2, {"wrong dtype", "found '<f2'"});
  const std::string u2 = write_file("u2.npy", npy_bytes(1, numpy_dict("<u2", "(2, 2, 2)"), std::string(16, '\0')));
  expect_error(kv(u2, NpyElementType::float16), u2, {"wrong dtype", "found '<u2'", "'<f2'"});

  const std::string big = write_file("big.npy", npy_bytes(1, numpy_dict(">f4", "(2, 2, 2)"), std::string(32, '\0')));
  expect_error(kv(big), big, {"wrong dtype", "big-endian '>f4'", "little-endian only", "astype('<f4')"});
  const std::string structured =
      write_file("structured.npy", npy_bytes(1,
                                             "{'descr': [('k', '<f4'), ('v', '<f4')], 'fortran_order': False, "
                                             "'shape': (2, 2, 2), }",
                                             std::string(64, '\0')));
  expect_error(kv(structured), structured,
               {"wrong dtype", "structured dtype [('k', '<f4'), ('v', '<f4')]", "accepted for float32: '<f4'"});
}

TEST_F(NpyReaderTest, RefusesFortranOrder) {
  const std::string path =
      write_file("fortran.npy", npy_bytes(1, numpy_dict("<f4", "(2, 2, 2)", true), std::string(32, '\0')));
  expect_error(kv(path), path, {"fortran_order: True; save with np.ascontiguousarray"});
}

TEST_F(NpyReaderTest, RefusesTheWrongRank) {
  for (const std::string shape : {"(8, 128)", "(5,)", "()", "(1, 2, 2, 2, 2)"}) {
    const std::string path = write_file("rank.npy", npy_bytes(1, numpy_dict("<f4", shape), std::string(64, '\0')));
    expect_error(kv(path), path,
                 {"wrong rank", "found shape " + shape, "rank 3 [tokens, kv_heads, head_dim]",
                  "rank 4 [layers, tokens, kv_heads, head_dim]"});
  }
}

TEST_F(NpyReaderTest, RefusesTruncatedDataAndTrailingBytes) {
  const std::string full = npy_bytes(1, numpy_dict("<f4", "(2, 3, 4)"), raw_bytes(std::vector<float>(24, 1.0f)));
  const std::size_t header = full.size() - 24 * 4;
  const std::string truncated = write_file("truncated.npy", full.substr(0, full.size() - 3));
  expect_error(
      kv(truncated), truncated,
      {"truncated data", "needs 96 data bytes after the " + std::to_string(header) + "-byte header",
       "(" + std::to_string(header + 96) + " in all)", "the file has " + std::to_string(full.size() - 3) + " bytes"});
  const std::string header_only = write_file("header_only.npy", full.substr(0, header));
  expect_error(kv(header_only), header_only, {"truncated data", "the file has " + std::to_string(header) + " bytes"});
  const std::string trailing = write_file("trailing.npy", full + "extra");
  expect_error(kv(trailing), trailing,
               {"trailing bytes", "the file has " + std::to_string(full.size() + 5) + " bytes",
                "5 beyond the " + std::to_string(full.size())});
}

TEST_F(NpyReaderTest, RefusesNaNAndInfNamingTheFirstIndexAndTheCount) {
  // [2 layers][3 tokens][2 heads][4 dims]: NaN at [1, 2, 0, 3], later an Inf and another NaN.
  std::vector<float> values(2 * 3 * 2 * 4, 0.25f);
  const auto flat = [](int l, int t, int h, int d) { return static_cast<std::size_t>(((l * 3 + t) * 2 + h) * 4 + d); };
  values[flat(1, 2, 0, 3)] = std::numeric_limits<float>::quiet_NaN();
  values[flat(1, 2, 1, 0)] = std::numeric_limits<float>::infinity();
  values[flat(1, 2, 1, 2)] = -std::numeric_limits<float>::quiet_NaN();
  const std::string path = write_file("nan.npy", npy_bytes(1, numpy_dict("<f4", "(2, 3, 2, 4)"), raw_bytes(values)));
  expect_error(kv(path), path,
               {"non-finite values: 3 of 48 (2 NaN, 1 Inf)", "the first at [layer, token, head, d] = [1, 2, 0, 3]"});

  // Rank 3 reads as layer 0; float16 infinity and bfloat16 NaN are caught after conversion.
  std::vector<std::uint16_t> half(2 * 2 * 4, 0x3C00);
  half[static_cast<std::size_t>((1 * 2 + 0) * 4 + 2)] = 0xFC00;  // -inf at token 1, head 0, d 2
  const std::string f16 = write_file("inf16.npy", npy_bytes(1, numpy_dict("<f2", "(2, 2, 4)"), raw_bytes(half)));
  expect_error(kv(f16, NpyElementType::float16), f16,
               {"non-finite values: 1 of 16 (0 NaN, 1 Inf)", "[layer, token, head, d] = [0, 1, 0, 2]"});
  std::vector<std::uint16_t> bf(2 * 2 * 4, 0x3F80);
  bf[0] = 0x7FC0;
  const std::string bf16 = write_file("nan_bf16.npy", npy_bytes(1, numpy_dict("<u2", "(2, 2, 4)"), raw_bytes(bf)));
  expect_error(kv(bf16, NpyElementType::bfloat16), bf16, {"1 NaN", "[layer, token, head, d] = [0, 0, 0, 0]"});

  std::vector<float> bias(2 * 3, 1.0f);
  bias[4] = std::numeric_limits<float>::infinity();
  const std::string bias_path = write_file("bias_inf.npy", npy_bytes(1, numpy_dict("<f4", "(2, 3)"), raw_bytes(bias)));
  expect_error([&] { read_npy_kv_bias(bias_path, NpyElementType::float32); }, bias_path,
               {"non-finite values: 1 of 6", "[layer, head, d] = [0, 1, 1]"});
}

TEST_F(NpyReaderTest, RefusesAZeroDimension) {
  for (const std::string shape : {"(0, 8, 128)", "(2, 4, 0, 8)"}) {
    const std::string path = write_file("zero.npy", npy_bytes(1, numpy_dict("<f4", shape), ""));
    expect_error(kv(path), path, {"zero dimension", "shape " + shape});
  }
}

TEST_F(NpyReaderTest, RefusesSizesThatOverflow) {
  const std::string product =
      write_file("product.npy", npy_bytes(2, numpy_dict("<f4", "(2147483647, 2147483647, 2147483647, 8)"), ""));
  expect_error(kv(product), product, {"size overflow", "(2147483647, 2147483647, 2147483647, 8)", "2^64 bytes"});
  const std::string wide = write_file("wide.npy", npy_bytes(1, numpy_dict("<f4", "(3000000000, 1, 1)"), ""));
  expect_error(kv(wide), wide, {"size overflow", "dimension 3000000000", "exceeds 2147483647"});
  const std::string huge =
      write_file("huge.npy", npy_bytes(1, numpy_dict("<f4", "(99999999999999999999999, 1, 1)"), ""));
  expect_error(kv(huge), huge, {"size overflow", "99999999999999999999999 does not fit in 64 bits"});
}

TEST_F(NpyReaderTest, MessagesStayOnOneLineWhateverTheFileName) {
  const std::string path = write_file("bad\nname.npy", "not numpy");
  try {
    read_npy_kv(path, NpyElementType::float32);
    ADD_FAILURE() << "no error";
  } catch (const NpyError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_NE(message.find("bad\\x0aname.npy: not an .npy file"), std::string::npos) << message;
  }
}
