#include "core/operating_point.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

namespace tilepath {
namespace {

template <typename E, std::size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

constexpr NameTable<KvDtype, 4> kKvNames{
    {{KvDtype::k16v16, "k16v16"}, {KvDtype::k8v16, "k8v16"}, {KvDtype::k16v8, "k16v8"}, {KvDtype::k8v8, "k8v8"}}};
constexpr NameTable<KPath, 3> kKPathNames{
    {{KPath::transform, "transform"}, {KPath::fp8_qk, "fp8_qk"}, {KPath::k16, "k16"}}};
constexpr NameTable<TransformMode, 4> kModeNames{{{TransformMode::none, "none"},
                                                  {TransformMode::full, "full"},
                                                  {TransformMode::k_only, "k_only"},
                                                  {TransformMode::separate_kv, "separate_kv"}}};
constexpr NameTable<KRepr, 2> kKReprNames{{{KRepr::plain, "plain"}, {KRepr::prebias, "prebias"}}};
constexpr NameTable<RopeLayout, 2> kRopeNames{
    {{RopeLayout::post_rope, "post_rope"}, {RopeLayout::pre_rope, "pre_rope"}}};
constexpr NameTable<ScaleGranularity, 2> kScaleNames{
    {{ScaleGranularity::per_tensor, "per_tensor"}, {ScaleGranularity::per_head, "per_head"}}};
constexpr NameTable<CacheState, 2> kCacheNames{{{CacheState::l2_warm, "l2_warm"}, {CacheState::hbm_cold, "hbm_cold"}}};

template <typename E, std::size_t N>
std::string_view name_of(const NameTable<E, N>& table, E value) {
  for (const auto& [e, name] : table) {
    if (e == value) return name;
  }
  return "?";
}

template <typename E, std::size_t N>
std::string allowed_names(const NameTable<E, N>& table) {
  std::string out;
  for (const auto& [e, name] : table) {
    if (!out.empty()) out += "|";
    out += name;
  }
  return out;
}

template <typename E, std::size_t N>
E parse_name(const NameTable<E, N>& table, std::string_view s, std::string_view field) {
  for (const auto& [e, name] : table) {
    if (name == s) return e;
  }
  throw ValidationError(std::string(field), "unknown value '" + std::string(s) + "'", allowed_names(table));
}

template <typename T>
std::string join(const std::vector<T>& values) {
  std::string out;
  for (const auto& v : values) {
    if (!out.empty()) out += "|";
    out += std::string(to_string(v));
  }
  return out;
}

bool is_power_of_two(int v) { return v > 0 && (v & (v - 1)) == 0; }

}  // namespace

std::string_view to_string(KvDtype v) { return name_of(kKvNames, v); }
std::string_view to_string(KPath v) { return name_of(kKPathNames, v); }
std::string_view to_string(TransformMode v) { return name_of(kModeNames, v); }
std::string_view to_string(KRepr v) { return name_of(kKReprNames, v); }
std::string_view to_string(RopeLayout v) { return name_of(kRopeNames, v); }
std::string_view to_string(ScaleGranularity v) { return name_of(kScaleNames, v); }
std::string_view to_string(CacheState v) { return name_of(kCacheNames, v); }

KvDtype parse_kv_dtype(std::string_view s, std::string_view field) { return parse_name(kKvNames, s, field); }
KPath parse_k_path(std::string_view s, std::string_view field) { return parse_name(kKPathNames, s, field); }
TransformMode parse_transform_mode(std::string_view s, std::string_view field) {
  return parse_name(kModeNames, s, field);
}
KRepr parse_k_repr(std::string_view s, std::string_view field) { return parse_name(kKReprNames, s, field); }
RopeLayout parse_rope_layout(std::string_view s, std::string_view field) { return parse_name(kRopeNames, s, field); }
ScaleGranularity parse_scale_granularity(std::string_view s, std::string_view field) {
  return parse_name(kScaleNames, s, field);
}
CacheState parse_cache_state(std::string_view s, std::string_view field) { return parse_name(kCacheNames, s, field); }

bool k_is_fp8(KvDtype v) { return v == KvDtype::k8v16 || v == KvDtype::k8v8; }
bool v_is_fp8(KvDtype v) { return v == KvDtype::k16v8 || v == KvDtype::k8v8; }

ValidationError::ValidationError(std::string field, const std::string& problem, const std::string& allowed)
    : std::runtime_error(field + ": " + problem + (allowed.empty() ? "" : "; allowed: " + allowed)),
      field_(std::move(field)) {}

// ---- which K paths and transform modes make sense per dtype control ----

std::vector<KPath> valid_k_paths(KvDtype kv) {
  if (k_is_fp8(kv)) return {KPath::transform, KPath::fp8_qk};
  return {KPath::k16};
}

std::vector<TransformMode> valid_modes(KvDtype kv, KPath path) {
  const auto paths = valid_k_paths(kv);
  if (std::find(paths.begin(), paths.end(), path) == paths.end()) return {};
  switch (kv) {
    case KvDtype::k16v16:
      return {TransformMode::none};  // nothing to convert
    case KvDtype::k16v8:
      return {TransformMode::full, TransformMode::separate_kv};  // only V is converted
    case KvDtype::k8v16:
      if (path == KPath::fp8_qk) return {TransformMode::none};  // FP8 K feeds the FP8 MMA; V is BF16
      return {TransformMode::full, TransformMode::separate_kv};
    case KvDtype::k8v8:
      // k_only: PV consumes FP8 V directly (P quantized), so only K (transform) or nothing (fp8_qk) is converted.
      return {TransformMode::full, TransformMode::k_only, TransformMode::separate_kv};
  }
  return {};
}

KPath default_k_path(KvDtype kv) { return valid_k_paths(kv).front(); }

TransformMode default_mode(KvDtype kv, KPath path) {
  const auto modes = valid_modes(kv, path);
  return modes.empty() ? TransformMode::none : modes.front();
}

// ---- validation ----

std::vector<ValidationError> OperatingPoint::problems() const {
  std::vector<ValidationError> out;
  auto range = [&](const char* field, int value, int lo, int hi) {
    if (value < lo || value > hi) {
      out.emplace_back(field, "value " + std::to_string(value) + " is out of range",
                       std::to_string(lo) + ".." + std::to_string(hi));
      return false;
    }
    return true;
  };
  range("batch", batch, 1, 4096);
  range("context", context, 1, 1 << 20);
  const bool heads_ok = range("q_heads", q_heads, 1, 256) & range("kv_heads", kv_heads, 1, 256);
  if (heads_ok && q_heads % kv_heads != 0) {
    out.emplace_back(
        "kv_heads", "kv heads (" + std::to_string(kv_heads) + ") must divide q heads (" + std::to_string(q_heads) + ")",
        "a divisor of " + std::to_string(q_heads));
  }
  if (head_dim != 64 && head_dim != 128 && head_dim != 256) {
    out.emplace_back("head_dim", "value " + std::to_string(head_dim) + " is not supported", "64|128|256");
  }
  if (!is_power_of_two(page_size) || page_size > 256) {
    out.emplace_back("page_size", "value " + std::to_string(page_size) + " is not a power of two in 1..256",
                     "1|2|4|8|16|32|64|128|256");
  }
  range("splits", splits, 0, 256);
  if (!context_lengths.empty()) {
    if (static_cast<int>(context_lengths.size()) != batch) {
      out.emplace_back(
          "context_lengths",
          "has " + std::to_string(context_lengths.size()) + " entries but batch is " + std::to_string(batch),
          "one length per request");
    }
    for (std::size_t i = 0; i < context_lengths.size(); ++i) {
      if (context_lengths[i] < 1 || context_lengths[i] > (1 << 20)) {
        out.emplace_back("context_lengths[" + std::to_string(i) + "]",
                         "value " + std::to_string(context_lengths[i]) + " is out of range", "1..1048576");
        break;
      }
    }
  }
  const auto paths = valid_k_paths(kv);
  if (std::find(paths.begin(), paths.end(), k_path) == paths.end()) {
    out.emplace_back("k_path",
                     "'" + std::string(to_string(k_path)) + "' is not valid for " + std::string(to_string(kv)),
                     join(paths));
  } else {
    const auto modes = valid_modes(kv, k_path);
    if (std::find(modes.begin(), modes.end(), mode) == modes.end()) {
      out.emplace_back("mode",
                       "'" + std::string(to_string(mode)) + "' is not valid for " + std::string(to_string(kv)) +
                           " with k_path " + std::string(to_string(k_path)),
                       join(modes));
    }
  }
  if (k_repr == KRepr::prebias && !k_is_fp8(kv)) {
    out.emplace_back("k_repr", "prebias applies only to an FP8 K cache, not " + std::string(to_string(kv)), "plain");
  }
  return out;
}

void OperatingPoint::validate() const {
  auto all = problems();
  if (!all.empty()) throw all.front();
}

long long OperatingPoint::total_tokens() const {
  if (context_lengths.empty()) return static_cast<long long>(batch) * context;
  return std::accumulate(context_lengths.begin(), context_lengths.end(), 0LL);
}

int OperatingPoint::max_context() const {
  if (context_lengths.empty()) return context;
  return *std::max_element(context_lengths.begin(), context_lengths.end());
}

double OperatingPoint::bytes_moved() const {
  const double tokens = static_cast<double>(total_tokens());
  const double k_bytes = k_is_fp8(kv) ? 1.0 : 2.0;
  const double v_bytes = v_is_fp8(kv) ? 1.0 : 2.0;
  const double kv_cache = tokens * kv_heads * head_dim * (k_bytes + v_bytes);
  const double q_and_o = 2.0 * batch * q_heads * head_dim * 2.0;  // BF16 in, BF16 out
  const int pages_per_seq = (max_context() + page_size - 1) / page_size;
  const double page_table = 4.0 * batch * pages_per_seq + 4.0 * batch;  // ids + lengths
  double scales = 0;
  if (k_is_fp8(kv) || v_is_fp8(kv)) scales = 2.0 * 4.0 * (scale == ScaleGranularity::per_head ? kv_heads : 1);
  const double bias = (k_repr == KRepr::prebias) ? 4.0 * kv_heads * head_dim : 0.0;
  return kv_cache + q_and_o + page_table + scales + bias;
}

std::string OperatingPoint::variant_label() const {
  std::string label = std::string(to_string(kv)) + "/" + std::string(to_string(k_path));
  if (mode != TransformMode::none) label += "/" + std::string(to_string(mode));
  if (k_repr != KRepr::plain) label += "/" + std::string(to_string(k_repr));
  return label;
}

std::string OperatingPoint::key() const {
  std::ostringstream s;
  s << "b" << batch << "_s" << context;
  if (!context_lengths.empty()) {
    s << "_ragged";
    for (int len : context_lengths) s << "-" << len;
  }
  s << "_hq" << q_heads << "_hk" << kv_heads << "_d" << head_dim << "_p" << page_size << "_" << to_string(kv) << "_"
    << to_string(k_path) << "_" << to_string(mode) << "_" << to_string(k_repr) << "_" << to_string(rope) << "_"
    << to_string(scale) << "_" << to_string(cache) << "_sp" << splits;
  return s.str();
}

// ---- JSON ----

nlohmann::json to_json(const OperatingPoint& op) {
  nlohmann::json j{{"batch", op.batch},
                   {"context", op.context},
                   {"q_heads", op.q_heads},
                   {"kv_heads", op.kv_heads},
                   {"head_dim", op.head_dim},
                   {"page_size", op.page_size},
                   {"kv", to_string(op.kv)},
                   {"k_path", to_string(op.k_path)},
                   {"mode", to_string(op.mode)},
                   {"k_repr", to_string(op.k_repr)},
                   {"rope", to_string(op.rope)},
                   {"scale", to_string(op.scale)},
                   {"cache", to_string(op.cache)},
                   {"splits", op.splits}};
  if (!op.context_lengths.empty()) j["context_lengths"] = op.context_lengths;
  return j;
}

namespace {

int json_int(const nlohmann::json& j, const std::string& field) {
  if (!j.is_number_integer()) {
    throw ValidationError(field, "expected an integer, got " + std::string(j.type_name()) + " " + j.dump(), "");
  }
  return j.get<int>();
}

std::string json_string(const nlohmann::json& j, const std::string& field) {
  if (!j.is_string()) {
    throw ValidationError(field, "expected a string, got " + std::string(j.type_name()) + " " + j.dump(), "");
  }
  return j.get<std::string>();
}

}  // namespace

OperatingPoint operating_point_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw ValidationError("operating point", "expected a JSON object", "");
  OperatingPoint op;
  bool path_given = false;
  bool mode_given = false;
  for (const auto& [key, value] : j.items()) {
    if (key == "batch")
      op.batch = json_int(value, key);
    else if (key == "context")
      op.context = json_int(value, key);
    else if (key == "q_heads")
      op.q_heads = json_int(value, key);
    else if (key == "kv_heads")
      op.kv_heads = json_int(value, key);
    else if (key == "head_dim")
      op.head_dim = json_int(value, key);
    else if (key == "page_size")
      op.page_size = json_int(value, key);
    else if (key == "splits")
      op.splits = json_int(value, key);
    else if (key == "kv")
      op.kv = parse_kv_dtype(json_string(value, key), key);
    else if (key == "k_path") {
      op.k_path = parse_k_path(json_string(value, key), key);
      path_given = true;
    } else if (key == "mode") {
      op.mode = parse_transform_mode(json_string(value, key), key);
      mode_given = true;
    } else if (key == "k_repr")
      op.k_repr = parse_k_repr(json_string(value, key), key);
    else if (key == "rope")
      op.rope = parse_rope_layout(json_string(value, key), key);
    else if (key == "scale")
      op.scale = parse_scale_granularity(json_string(value, key), key);
    else if (key == "cache")
      op.cache = parse_cache_state(json_string(value, key), key);
    else if (key == "context_lengths") {
      if (!value.is_array()) throw ValidationError(key, "expected an array of integers", "");
      op.context_lengths.clear();
      for (std::size_t i = 0; i < value.size(); ++i) {
        op.context_lengths.push_back(json_int(value[i], key + "[" + std::to_string(i) + "]"));
      }
    } else {
      throw ValidationError(key, "unknown field",
                            "batch|context|context_lengths|q_heads|kv_heads|head_dim|page_size|kv|k_path|mode|k_repr|"
                            "rope|scale|cache|splits");
    }
  }
  if (!path_given) op.k_path = default_k_path(op.kv);
  if (!mode_given) op.mode = default_mode(op.kv, op.k_path);
  return op;
}

// ---- C ABI ----

tp_case to_tp_case(const OperatingPoint& op, const char* gpu_model) {
  tp_case c{};
  c.struct_size = sizeof(tp_case);
  c.batch = op.batch;
  c.context = op.context;
  c.context_lengths = op.context_lengths.empty() ? nullptr : op.context_lengths.data();
  c.q_heads = op.q_heads;
  c.kv_heads = op.kv_heads;
  c.head_dim = op.head_dim;
  c.page_size = op.page_size;
  c.kv_dtype = static_cast<int32_t>(op.kv);
  c.k_path = static_cast<int32_t>(op.k_path);
  c.transform_mode = static_cast<int32_t>(op.mode);
  c.k_repr = static_cast<int32_t>(op.k_repr);
  c.rope_layout = static_cast<int32_t>(op.rope);
  c.scale_granularity = static_cast<int32_t>(op.scale);
  c.cache_state = static_cast<int32_t>(op.cache);
  c.splits = op.splits;
  c.gpu_model = gpu_model;
  return c;
}

OperatingPoint from_tp_case(const tp_case& c) {
  // Enum values out of range are kept as-is and caught by validate(): we only name them here.
  auto check_enum = [](int value, int count, const char* field, const std::string& allowed) {
    if (value < 0 || value >= count) {
      throw ValidationError(field, "enum value " + std::to_string(value) + " is out of range", allowed);
    }
  };
  check_enum(c.kv_dtype, 4, "kv", allowed_names(kKvNames));
  check_enum(c.k_path, 3, "k_path", allowed_names(kKPathNames));
  check_enum(c.transform_mode, 4, "mode", allowed_names(kModeNames));
  check_enum(c.k_repr, 2, "k_repr", allowed_names(kKReprNames));
  check_enum(c.rope_layout, 2, "rope", allowed_names(kRopeNames));
  check_enum(c.scale_granularity, 2, "scale", allowed_names(kScaleNames));
  check_enum(c.cache_state, 2, "cache", allowed_names(kCacheNames));
  OperatingPoint op;
  op.batch = c.batch;
  op.context = c.context;
  if (c.context_lengths != nullptr && c.batch > 0)
    op.context_lengths.assign(c.context_lengths, c.context_lengths + c.batch);
  op.q_heads = c.q_heads;
  op.kv_heads = c.kv_heads;
  op.head_dim = c.head_dim;
  op.page_size = c.page_size;
  op.kv = static_cast<KvDtype>(c.kv_dtype);
  op.k_path = static_cast<KPath>(c.k_path);
  op.mode = static_cast<TransformMode>(c.transform_mode);
  op.k_repr = static_cast<KRepr>(c.k_repr);
  op.rope = static_cast<RopeLayout>(c.rope_layout);
  op.scale = static_cast<ScaleGranularity>(c.scale_granularity);
  op.cache = static_cast<CacheState>(c.cache_state);
  op.splits = c.splits;
  return op;
}

}  // namespace tilepath
