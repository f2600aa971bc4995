#include "core/quality/key_model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>

#include "core/json_input.h"
#include "core/numerics/fp8.h"
#include "core/numerics/problem_originals.h"

namespace tilepath::quality {
namespace {

namespace fs = std::filesystem;

// Streams per tensor, distinct from each other and per (request, kv head).
constexpr std::uint64_t kStreamBias = 11;
constexpr std::uint64_t kStreamProjection = 12;
constexpr std::uint64_t kStreamRowBase = 1ull << 40;

std::vector<std::string> key_files(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(dir) / "keys", ec))
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

double normal(std::mt19937_64& rng) {
  return numerics::detail::standard_normal_from_bits(static_cast<std::uint32_t>(rng()));
}
double bf16(double x) { return numerics::round_bf16(static_cast<float>(x)); }

}  // namespace

KeyModel load_key_model(const std::string& id, const std::string& models_dir) {
  std::string known;
  for (const std::string& f : key_files(models_dir)) {
    const std::string stem = fs::path(f).stem().string();
    if (stem == id) {
      std::ifstream in(f);
      return numerics::parse_key_model(parse_json_input(in, f), stem, f);
    }
    known += (known.empty() ? "" : "|") + stem;
  }
  throw std::runtime_error("unknown key distribution '" + id + "'; allowed: " + known + " or an .npy file");
}

std::vector<KeyModel> load_key_models(const std::string& models_dir) {
  std::vector<KeyModel> out;
  for (const std::string& f : key_files(models_dir))
    out.push_back(load_key_model(fs::path(f).stem().string(), models_dir));
  return out;
}

void rotate(double* row, int rotary_dim, int position) {
  const int half = rotary_dim / 2;
  for (int i = 0; i < half; ++i) {
    const double angle = position * std::pow(10000.0, -2.0 * i / rotary_dim);
    const double c = std::cos(angle), s = std::sin(angle);
    const double x = row[i], y = row[i + half];
    row[i] = x * c - y * s;
    row[i + half] = x * s + y * c;
  }
}

KeyGenerator::KeyGenerator(KeyModel model, const OperatingPoint& op, std::uint64_t seed)
    : model_(std::move(model)), op_(op), seed_(seed) {
  if (model_.kind == KeyKind::projected) {
    std::mt19937_64 rng(numerics::detail::stream_seed(seed_, kStreamProjection));
    projection_.resize(static_cast<std::size_t>(op_.kv_heads) * op_.head_dim * model_.model_dim);
    const double scale = 1.0 / std::sqrt(double(model_.model_dim));
    for (double& w : projection_) w = normal(rng) * scale;
  }
}

int KeyGenerator::rotary_dim() const {
  // An even number of channels: RoPE rotates pairs.
  const int r = static_cast<int>(std::lround(model_.rope_fraction * op_.head_dim));
  return std::max(2, r - r % 2);
}

std::vector<double> KeyGenerator::bias(int kv_head) const {
  std::vector<double> b(op_.head_dim, 0.0);
  if (model_.bias_channels_per_head <= 0) return b;
  std::mt19937_64 rng(numerics::detail::stream_seed(seed_, kStreamBias + 1000 * static_cast<std::uint64_t>(kv_head)));
  std::vector<int> channels(op_.head_dim);
  for (int d = 0; d < op_.head_dim; ++d) channels[d] = d;
  std::shuffle(channels.begin(), channels.end(), rng);
  std::uniform_real_distribution<double> magnitude(model_.bias_min_std, model_.bias_max_std);
  for (int i = 0; i < std::min(model_.bias_channels_per_head, op_.head_dim); ++i) {
    const double sign = (rng() & 1) ? 1.0 : -1.0;
    b[channels[i]] = bf16(sign * magnitude(rng));
  }
  return b;
}

GateRow KeyGenerator::row(int request, int kv_head, int tokens) const {
  GateRow r;
  r.request = request;
  r.kv_head = kv_head;
  r.tokens = tokens;
  r.head_dim = op_.head_dim;
  r.rotary_dim = rotary_dim();
  const int D = op_.head_dim, G = op_.gqa_ratio();
  std::mt19937_64 rng(numerics::detail::stream_seed(
      seed_, kStreamRowBase + static_cast<std::uint64_t>(request) * 4096 + static_cast<std::uint64_t>(kv_head)));
  r.bias = bias(kv_head);
  r.k_pre.resize(static_cast<std::size_t>(tokens) * D);
  r.v.resize(r.k_pre.size());
  r.q.resize(static_cast<std::size_t>(G) * D);
  for (double& x : r.q) x = bf16(normal(rng));
  std::student_t_distribution<double> student(model_.student_dof);
  const double student_unit = 1.0 / std::sqrt(model_.student_dof / (model_.student_dof - 2.0));
  std::vector<double> x(model_.model_dim);
  const double* w =
      projection_.empty() ? nullptr : &projection_[static_cast<std::size_t>(kv_head) * D * model_.model_dim];
  for (int t = 0; t < tokens; ++t) {
    double* k = &r.k_pre[static_cast<std::size_t>(t) * D];
    if (model_.kind == KeyKind::projected) {
      for (double& xi : x) xi = normal(rng);
      for (int d = 0; d < D; ++d) {
        double s = 0;
        for (int i = 0; i < model_.model_dim; ++i) s += w[static_cast<std::size_t>(d) * model_.model_dim + i] * x[i];
        k[d] = s;
      }
    } else if (model_.kind == KeyKind::student_t) {
      for (int d = 0; d < D; ++d) k[d] = student(rng) * student_unit;
    } else {
      for (int d = 0; d < D; ++d) k[d] = normal(rng);
    }
    for (int d = 0; d < D; ++d) k[d] = bf16(k[d] + r.bias[d]);
    for (int d = 0; d < D; ++d) r.v[static_cast<std::size_t>(t) * D + d] = bf16(normal(rng));
  }
  return r;
}

}  // namespace tilepath::quality
