// save_problem_npy: the problem's tensors as .npy plus a manifest.json describing them.
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/numerics/decode_problem.h"
#include "core/numerics/npy_writer.h"

namespace tilepath::numerics {

namespace {

struct NpyDescriptor {
  const char* descr;
  std::size_t item_bytes;
};

template <class T>
NpyDescriptor npy_type();
template <>
NpyDescriptor npy_type<std::uint8_t>() {
  return {"|u1", 1};
}
template <>
NpyDescriptor npy_type<std::uint16_t>() {
  return {"<u2", 2};
}
template <>
NpyDescriptor npy_type<std::int32_t>() {
  return {"<i4", 4};
}
template <>
NpyDescriptor npy_type<float>() {
  return {"<f4", 4};
}

class ManifestWriter {
 public:
  explicit ManifestWriter(std::filesystem::path dir) : dir_(std::move(dir)) {}

  template <class T>
  void add(const std::string& name, const std::vector<T>& data, const std::vector<std::size_t>& shape,
           const std::string& meaning) {
    const NpyDescriptor type = npy_type<T>();
    const std::string file = name + ".npy";
    write_npy((dir_ / file).string(), type.descr, type.item_bytes, shape, data.data(), data.size() * sizeof(T));
    files_.push_back({{"name", name}, {"file", file}, {"dtype", type.descr}, {"shape", shape}, {"meaning", meaning}});
  }
  const nlohmann::json& files() const { return files_; }

 private:
  std::filesystem::path dir_;
  nlohmann::json files_ = nlohmann::json::array();
};

}  // namespace

void save_problem_npy(const DecodeProblem& p, const std::vector<float>& out, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot create directory: " + ec.message());
  const auto& op = p.op;
  const std::size_t B = op.batch, Hq = op.q_heads, Hk = op.kv_heads, D = op.head_dim, P = op.page_size;
  const std::vector<std::size_t> qo_shape{B, Hq, D};
  const std::vector<std::size_t> cache_shape{static_cast<std::size_t>(p.num_pages), P, Hk, D};

  ManifestWriter m(dir);
  m.add("q", p.q, qo_shape, "query, BF16 bits [batch][q_heads][head_dim]");
  const std::vector<std::size_t> mx_scale_shape{static_cast<std::size_t>(p.num_pages), P, Hk, D / 32};
  if (!p.k_mx_scales.empty())
    m.add(
        "k_pages", p.k8, cache_shape,
        "key cache, MXFP8 E4M3 element bytes [page][slot][kv_head][dim]; K = e4m3 * 2^(k_mx_scales[.., dim/32] - 127)");
  else if (!p.k8.empty())
    m.add("k_pages", p.k8, cache_shape, "key cache, E4M3 bytes [page][slot][kv_head][dim]; K = k_bias + k_scale*e4m3");
  else
    m.add("k_pages", p.k16, cache_shape, "key cache, BF16 bits [page][slot][kv_head][dim]");
  if (!p.v_mx_scales.empty())
    m.add("v_pages", p.v8, cache_shape,
          "value cache, MXFP8 E4M3 element bytes [page][slot][kv_head][dim]; V = e4m3 * 2^(v_mx_scales[.., dim/32] - "
          "127)");
  else if (!p.v8.empty())
    m.add("v_pages", p.v8, cache_shape, "value cache, E4M3 bytes [page][slot][kv_head][dim]; V = v_scale*e4m3");
  else
    m.add("v_pages", p.v16, cache_shape, "value cache, BF16 bits [page][slot][kv_head][dim]");
  m.add("page_table", p.page_table, {B, static_cast<std::size_t>(p.max_pages_per_seq)},
        "page id of each request's i-th page (token t in page t/page_size, slot t%page_size); unused entries 0");
  m.add("lengths", p.lengths, {B}, "tokens per request");
  m.add("k_scale", p.k_scale, {p.k_scale.size()}, "K dequantization scale per kv head (or one per tensor)");
  m.add("v_scale", p.v_scale, {p.v_scale.size()}, "V dequantization scale per kv head (or one per tensor)");
  if (!p.k_mx_scales.empty())
    m.add("k_mx_scales", p.k_mx_scales, mx_scale_shape,
          "E8M0 block scales of k_pages (OCP MX), one per 32 elements along dim: 2^(code - 127), 0xFF NaN");
  if (!p.v_mx_scales.empty())
    m.add("v_mx_scales", p.v_mx_scales, mx_scale_shape,
          "E8M0 block scales of v_pages (OCP MX), one per 32 elements along dim: 2^(code - 127), 0xFF NaN");
  if (!p.k_bias.empty()) m.add("k_bias", p.k_bias, {Hk, D}, "exact per-channel key bias (prebias), float32");
  if (!out.empty()) {
    if (out.size() != B * Hq * D) throw std::invalid_argument("save_problem_npy: output size does not match the op");
    m.add("out", out, qo_shape, "kernel output (BF16-rounded values as float32) [batch][q_heads][head_dim]");
  }

  nlohmann::json manifest;
  manifest["format"] = "tilepath decode problem v1";
  manifest["op"] = to_json(op);
  manifest["softmax_scale"] = p.softmax_scale;
  manifest["num_pages"] = p.num_pages;
  manifest["max_pages_per_seq"] = p.max_pages_per_seq;
  manifest["k_scale"] = p.k_scale;
  manifest["v_scale"] = p.v_scale;
  manifest["files"] = m.files();
  const auto manifest_path = std::filesystem::path(dir) / "manifest.json";
  std::ofstream file(manifest_path);
  if (!file) throw std::runtime_error(manifest_path.string() + ": cannot open for writing");
  file << manifest.dump(2) << "\n";
  if (!file) throw std::runtime_error(manifest_path.string() + ": write failed");
}

}  // namespace tilepath::numerics
