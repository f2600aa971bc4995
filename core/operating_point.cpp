#include "core/operating_point.h"

#include "core/enum_names.h"
#include "core/op_fields.h"
#include "core/printable_text.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <numeric>
#include <utility>

#include <nlohmann/json.hpp>

namespace tilepath {
namespace {

template <typename T>
std::string join(const std::vector<T>& values) {
  std::string out;
  for (const auto& v : values) {
    if (!out.empty()) out += "|";
    out += std::string(to_string(v));
  }
  return out;
}

}  // namespace

std::string_view to_string(KvDtype v) { return names::name_of(v); }
std::string_view to_string(KPath v) { return names::name_of(v); }
std::string_view to_string(TransformMode v) { return names::name_of(v); }
std::string_view to_string(KRepr v) { return names::name_of(v); }
std::string_view to_string(RopeLayout v) { return names::name_of(v); }
std::string_view to_string(ScaleGranularity v) { return names::name_of(v); }
std::string_view to_string(CacheState v) { return names::name_of(v); }
std::string_view to_string(Mma v) { return names::name_of(v); }

KvDtype parse_kv_dtype(std::string_view s, std::string_view field) { return names::parse<KvDtype>(s, field); }
KPath parse_k_path(std::string_view s, std::string_view field) { return names::parse<KPath>(s, field); }
TransformMode parse_transform_mode(std::string_view s, std::string_view field) {
  return names::parse<TransformMode>(s, field);
}
KRepr parse_k_repr(std::string_view s, std::string_view field) { return names::parse<KRepr>(s, field); }
RopeLayout parse_rope_layout(std::string_view s, std::string_view field) { return names::parse<RopeLayout>(s, field); }
ScaleGranularity parse_scale_granularity(std::string_view s, std::string_view field) {
  return names::parse<ScaleGranularity>(s, field);
}
CacheState parse_cache_state(std::string_view s, std::string_view field) { return names::parse<CacheState>(s, field); }
Mma parse_mma(std::string_view s, std::string_view field) { return names::parse<Mma>(s, field); }

bool k_is_fp8(KvDtype v) { return v == KvDtype::k8v16 || v == KvDtype::k8v8; }
bool v_is_fp8(KvDtype v) { return v == KvDtype::k16v8 || v == KvDtype::k8v8; }

ValidationError::ValidationError(std::string field, const std::string& problem, const std::string& allowed)
    : std::runtime_error(printable_text(field) + ": " + printable_text(problem) +
                         (allowed.empty() ? "" : "; allowed: " + printable_text(allowed))),
      field_(printable_text(field)) {}

// ---- which K paths and transform modes make sense per dtype control ----

std::vector<KPath> valid_k_paths(KvDtype kv) {
  if (k_is_fp8(kv)) return {KPath::transform, KPath::fp8_qk};
  return {KPath::k16};
}

bool restores_bias_in_scores(const OperatingPoint& op) {
  return k_is_fp8(op.kv) && op.k_path != KPath::k16 && op.k_repr == KRepr::prebias && op.rope == RopeLayout::post_rope;
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
  // Each field's own range and condition, as the field table states them.
  for (const OpField& f : op_fields()) {
    try {
      if (f.kind == FieldKind::integer) check_field_int(f, f.get_int(*this), std::string(f.name));
      if (f.kind == FieldKind::integer_list)
        for (std::size_t i = 0; i < context_lengths.size(); ++i)
          check_field_int(f, context_lengths[i], std::string(f.name) + "[" + std::to_string(i) + "]");
    } catch (const ValidationError& e) {
      out.push_back(e);
    }
  }
  // Rules between fields.
  const bool heads_in_range = q_heads >= 1 && kv_heads >= 1;
  if (heads_in_range && q_heads % kv_heads != 0) {
    out.emplace_back(
        "kv_heads", "kv heads (" + std::to_string(kv_heads) + ") must divide q heads (" + std::to_string(q_heads) + ")",
        "a divisor of " + std::to_string(q_heads));
  }
  if (!context_lengths.empty() && static_cast<int>(context_lengths.size()) != batch) {
    out.emplace_back("context_lengths",
                     "has " + std::to_string(context_lengths.size()) + " entries but batch is " + std::to_string(batch),
                     "one length per request");
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
  if (k_repr != KRepr::plain && !k_is_fp8(kv)) {
    out.emplace_back(
        "k_repr", std::string(to_string(k_repr)) + " applies only to an FP8 K cache, not " + std::string(to_string(kv)),
        "plain");
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
  if (k_repr == KRepr::mxfp8) {
    // One E8M0 byte per 32 elements of each FP8 tensor, every token.
    scales = tokens * kv_heads * (head_dim / 32.0) * ((k_is_fp8(kv) ? 1 : 0) + (v_is_fp8(kv) ? 1 : 0));
  } else if (k_is_fp8(kv) || v_is_fp8(kv)) {
    scales = 2.0 * 4.0 * (scale == ScaleGranularity::per_head ? kv_heads : 1);
  }
  const double bias = (k_repr == KRepr::prebias) ? 4.0 * kv_heads * head_dim : 0.0;
  return kv_cache + q_and_o + page_table + scales + bias;
}

std::string OperatingPoint::variant_label() const {
  std::string label = std::string(to_string(kv)) + "/" + std::string(to_string(k_path));
  if (mode != TransformMode::none) label += "/" + std::string(to_string(mode));
  if (k_repr != KRepr::plain) label += "/" + std::string(to_string(k_repr));
  if (mma != Mma::mma_sync) label += "/" + std::string(to_string(mma));
  return label;
}

std::string OperatingPoint::key() const {
  // Appended, not streamed: the GUI's break-even and dispatch views key 100k cases by it.
  std::string s;
  s.reserve(128);
  const auto number = [&s](const char* label, int value) { s.append(label).append(std::to_string(value)); };
  const auto name = [&s](std::string_view value) { s.append("_").append(value); };
  number("b", batch);
  number("_s", context);
  if (!context_lengths.empty()) {
    s += "_ragged";
    for (int len : context_lengths) number("-", len);
  }
  number("_hq", q_heads);
  number("_hk", kv_heads);
  number("_d", head_dim);
  number("_p", page_size);
  name(to_string(kv));
  name(to_string(k_path));
  name(to_string(mode));
  name(to_string(k_repr));
  name(to_string(rope));
  name(to_string(scale));
  name(to_string(cache));
  number("_sp", splits);
  if (mma != Mma::mma_sync) name(to_string(mma));
  return s;
}

// ---- JSON ----

nlohmann::json to_json(const OperatingPoint& op) {
  nlohmann::json j = nlohmann::json::object();
  for (const OpField& f : op_fields()) {
    if (f.kind == FieldKind::integer_list && op.context_lengths.empty()) continue;  // uniform batch
    j[std::string(f.name)] = f.get_json(op);
  }
  return j;
}

void apply_path_defaults(OperatingPoint& op, bool k_path_given, bool mode_given) {
  if (!k_path_given) op.k_path = default_k_path(op.kv);
  if (!mode_given) op.mode = default_mode(op.kv, op.k_path);
}

OperatingPoint operating_point_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw ValidationError("operating point", "expected a JSON object", "");
  OperatingPoint op;
  for (const auto& [key, value] : j.items()) {
    const OpField* f = find_op_field(key);
    if (f == nullptr) throw ValidationError(key, "unknown field", op_field_names());
    f->parse_json(op, value, key);
  }
  apply_path_defaults(op, j.contains("k_path"), j.contains("mode"));
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
  c.mma = static_cast<int32_t>(op.mma);
  return c;
}

OperatingPoint from_tp_case(const tp_case& c) {
  // An enum value this build has no name for is refused here, naming the field.
  auto check_enum = [](int value, const char* field) {
    const OpField& f = *find_op_field(field);
    if (value < 0 || value >= static_cast<int>(f.all_names().size()))
      throw ValidationError(field, "enum value " + std::to_string(value) + " is out of range", f.allowed());
  };
  check_enum(c.kv_dtype, "kv");
  check_enum(c.k_path, "k_path");
  check_enum(c.transform_mode, "mode");
  check_enum(c.k_repr, "k_repr");
  check_enum(c.rope_layout, "rope");
  check_enum(c.scale_granularity, "scale");
  check_enum(c.cache_state, "cache");
  // ABI 2.5: an older host's shorter case has no mma and ran mma_sync.
  const bool has_mma = c.struct_size >= offsetof(tp_case, mma) + sizeof(c.mma);
  if (has_mma) check_enum(c.mma, "mma");
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
  op.mma = has_mma ? static_cast<Mma>(c.mma) : Mma::mma_sync;
  return op;
}

}  // namespace tilepath
