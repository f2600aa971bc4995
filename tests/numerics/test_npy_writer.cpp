// .npy v1.0 files and the problem manifest written by save_problem_npy.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "core/numerics/decode_problem.h"
#include "core/numerics/npy_writer.h"

using namespace tilepath;
using namespace tilepath::numerics;

namespace {

struct NpyFile {
  std::string header;
  std::string data;
  std::size_t header_total = 0;
};

NpyFile read_npy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  NpyFile f;
  if (bytes.size() < 10) return f;
  const std::size_t len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  f.header = bytes.substr(0, 10 + len);
  f.header_total = 10 + len;
  f.data = bytes.substr(10 + len);
  return f;
}

std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("tilepath_npy_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

}  // namespace

TEST(NpyWriter, HeaderIsVersion1AlignedAndDescribesTheArray) {
  const std::string h = npy_header("<u2", {3, 4});
  EXPECT_EQ(h.substr(0, 6), "\x93NUMPY");
  EXPECT_EQ(h[6], '\x01');
  EXPECT_EQ(h[7], '\x00');
  EXPECT_EQ(h.size() % 64, 0u);
  const std::size_t len = static_cast<unsigned char>(h[8]) | (static_cast<unsigned char>(h[9]) << 8);
  EXPECT_EQ(len + 10, h.size());
  EXPECT_EQ(h.back(), '\n');
  EXPECT_NE(h.find("{'descr': '<u2', 'fortran_order': False, 'shape': (3, 4), }"), std::string::npos) << h;
  EXPECT_NE(npy_header("|u1", {5}).find("'shape': (5,)"), std::string::npos);
}

TEST(NpyWriter, RejectsAShapeThatDoesNotMatchTheData) {
  const auto dir = fresh_dir("bad");
  std::filesystem::create_directories(dir);
  const float values[3] = {1, 2, 3};
  EXPECT_THROW(write_npy((dir / "x.npy").string(), "<f4", 4, {2, 2}, values, sizeof values), std::runtime_error);
  EXPECT_THROW(write_npy("/nonexistent_dir_tilepath/x.npy", "<f4", 4, {3}, values, sizeof values), std::runtime_error);
  std::filesystem::remove_all(dir);
}

TEST(SaveProblemNpy, WritesEveryTensorAndAManifest) {
  OperatingPoint op;
  op.batch = 2;
  op.context = 40;
  op.q_heads = 4;
  op.kv_heads = 2;
  op.head_dim = 64;
  op.page_size = 16;
  op.kv = KvDtype::k8v16;
  op.k_path = KPath::transform;
  op.mode = TransformMode::full;
  op.k_repr = KRepr::prebias;
  const auto p = make_problem(op, 1);
  std::vector<float> out(2 * 4 * 64, 0.5f);
  const auto dir = fresh_dir("problem");
  save_problem_npy(p, out, dir.string());

  std::ifstream manifest_file(dir / "manifest.json");
  const auto manifest = nlohmann::json::parse(manifest_file);
  EXPECT_EQ(manifest["op"]["batch"], 2);
  EXPECT_EQ(manifest["num_pages"], p.num_pages);
  std::map<std::string, nlohmann::json> files;
  for (const auto& f : manifest["files"]) files[f["name"]] = f;
  for (const char* name : {"q", "k_pages", "v_pages", "page_table", "lengths", "k_scale", "v_scale", "k_bias", "out"}) {
    ASSERT_TRUE(files.count(name)) << name;
    EXPECT_FALSE(files[name]["meaning"].get<std::string>().empty());
  }
  EXPECT_EQ(files["k_pages"]["dtype"], "|u1");
  EXPECT_EQ(files["v_pages"]["dtype"], "<u2");
  EXPECT_EQ(files["q"]["dtype"], "<u2");
  EXPECT_EQ(files["page_table"]["dtype"], "<i4");
  EXPECT_EQ(files["out"]["dtype"], "<f4");
  EXPECT_EQ(files["k_pages"]["shape"], nlohmann::json({p.num_pages, 16, 2, 64}));

  const NpyFile k = read_npy(dir / "k_pages.npy");
  EXPECT_EQ(k.header_total % 64, 0u);
  EXPECT_NE(k.header.find("'descr': '|u1'"), std::string::npos);
  ASSERT_EQ(k.data.size(), p.k8.size());
  EXPECT_EQ(std::memcmp(k.data.data(), p.k8.data(), p.k8.size()), 0);

  const NpyFile table = read_npy(dir / "page_table.npy");
  ASSERT_EQ(table.data.size(), p.page_table.size() * 4);
  EXPECT_EQ(std::memcmp(table.data.data(), p.page_table.data(), table.data.size()), 0);

  const NpyFile bias = read_npy(dir / "k_bias.npy");
  ASSERT_EQ(bias.data.size(), p.k_bias.size() * 4);
  EXPECT_EQ(std::memcmp(bias.data.data(), p.k_bias.data(), bias.data.size()), 0) << "bias stored exactly";
  std::filesystem::remove_all(dir);
}

TEST(SaveProblemNpy, WritesTheMxfp8BlockScalesBesideTheElements) {
  OperatingPoint op;
  op.batch = 2;
  op.context = 40;
  op.q_heads = 4;
  op.kv_heads = 2;
  op.head_dim = 64;
  op.page_size = 16;
  op.kv = KvDtype::k8v8;
  op.k_path = KPath::transform;
  op.mode = TransformMode::full;
  op.k_repr = KRepr::mxfp8;
  const auto p = make_problem(op, 1);
  const auto dir = fresh_dir("mxfp8");
  save_problem_npy(p, {}, dir.string());

  std::ifstream manifest_file(dir / "manifest.json");
  const auto manifest = nlohmann::json::parse(manifest_file);
  std::map<std::string, nlohmann::json> files;
  for (const auto& f : manifest["files"]) files[f["name"]] = f;
  for (const char* name : {"k_mx_scales", "v_mx_scales"}) {
    ASSERT_TRUE(files.count(name)) << name;
    EXPECT_EQ(files[name]["dtype"], "|u1") << name;
    EXPECT_EQ(files[name]["shape"], nlohmann::json({p.num_pages, 16, 2, 64 / 32})) << name;
  }
  EXPECT_NE(files["k_pages"]["meaning"].get<std::string>().find("MXFP8"), std::string::npos);
  const NpyFile k_scales = read_npy(dir / "k_mx_scales.npy");
  ASSERT_EQ(k_scales.data.size(), p.k_mx_scales.size());
  EXPECT_EQ(std::memcmp(k_scales.data.data(), p.k_mx_scales.data(), p.k_mx_scales.size()), 0);
  const NpyFile v_scales = read_npy(dir / "v_mx_scales.npy");
  ASSERT_EQ(v_scales.data.size(), p.v_mx_scales.size());
  EXPECT_EQ(std::memcmp(v_scales.data.data(), p.v_mx_scales.data(), p.v_mx_scales.size()), 0);
  std::filesystem::remove_all(dir);
}
