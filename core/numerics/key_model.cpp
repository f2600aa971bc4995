#include "core/numerics/key_model.h"

#include <stdexcept>

#include "core/json_input.h"

namespace tilepath::numerics {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& file, const std::string& field, const std::string& problem) {
  throw std::runtime_error(file + ": field '" + field + "': " + problem);
}

// {"value": N, "source": "..."}: every parameter says where it comes from.
double parameter(const json& j, const std::string& key, const std::string& file) {
  if (!j.contains(key)) fail(file, key, "missing");
  const json& p = j[key];
  if (!p.is_object() || !p.contains("value") || !p["value"].is_number())
    fail(file, key, "expected {\"value\": number, \"source\": text}");
  if (!p.contains("source") || !p["source"].is_string() || p["source"].get<std::string>().empty())
    fail(file, key + ".source", "missing: every parameter names where it comes from");
  return p["value"].get<double>();
}

}  // namespace

bool KeyModel::same_parameters(const KeyModel& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case KeyKind::student_t:
      return student_dof == o.student_dof;
    case KeyKind::projected:
      if (model_dim != o.model_dim || rope_fraction != o.rope_fraction) return false;
      [[fallthrough]];
    case KeyKind::channel_bias:
      return bias_channels_per_head == o.bias_channels_per_head && bias_min_std == o.bias_min_std &&
             bias_max_std == o.bias_max_std;
    default:
      return true;
  }
}

KeyModel parse_key_model(const json& j, const std::string& id, const std::string& file) {
  if (!j.is_object()) throw std::runtime_error(file + ": the top level must be a JSON object");
  KeyModel m;
  m.id = id;
  m.file = file;
  for (const char* key : {"name", "kind", "source"})
    if (!j.contains(key) || !j[key].is_string()) fail(file, key, "missing or not a string");
  m.name = j["name"].get<std::string>();
  m.source = j["source"].get<std::string>();
  const std::string kind = j["kind"].get<std::string>();
  if (kind == "gaussian") {
    m.kind = KeyKind::gaussian;
  } else if (kind == "student_t") {
    m.kind = KeyKind::student_t;
    m.student_dof = parameter(j, "student_dof", file);
    if (!(m.student_dof > 2)) fail(file, "student_dof", "must be > 2 (a finite variance)");
  } else if (kind == "channel_bias" || kind == "projected") {
    m.kind = kind == "channel_bias" ? KeyKind::channel_bias : KeyKind::projected;
    m.bias_channels_per_head = static_cast<int>(parameter(j, "bias_channels_per_head", file));
    m.bias_min_std = parameter(j, "bias_min_std", file);
    m.bias_max_std = parameter(j, "bias_max_std", file);
    if (m.bias_channels_per_head < 0 || m.bias_min_std < 0 || m.bias_max_std < m.bias_min_std)
      fail(file, "bias_*", "need channels >= 0 and 0 <= min <= max");
    if (m.kind == KeyKind::projected) {
      m.model_dim = static_cast<int>(parameter(j, "model_dim", file));
      m.rope_fraction = parameter(j, "rope_fraction", file);
      if (m.model_dim < 1) fail(file, "model_dim", "must be >= 1");
      if (!(m.rope_fraction > 0 && m.rope_fraction <= 1)) fail(file, "rope_fraction", "must be in (0, 1]");
    }
  } else {
    fail(file, "kind", "'" + kind + "' is not allowed; allowed: gaussian|student_t|channel_bias|projected");
  }
  return m;
}

KeyModel parse_key_model_text(std::string_view text, const std::string& id, const std::string& file) {
  return parse_key_model(parse_json_input(text, file), id, file);
}

KeyKind key_kind_of(KeyDistribution dist) {
  switch (dist) {
    case KeyDistribution::heavy_tailed:
      return KeyKind::student_t;
    case KeyDistribution::qwen_bias:
      return KeyKind::channel_bias;
    default:
      return KeyKind::gaussian;
  }
}

void require_kind(const KeyModel& model, KeyDistribution dist, const std::string& field) {
  if (model.kind == key_kind_of(dist)) return;
  throw std::invalid_argument(field + ": the key model in " + model.file + " is not of the kind that '" +
                              std::string(to_string(dist)) + "' generates (models/keys/" +
                              std::string(to_string(dist)) + ".json's kind)");
}

const KeyModel& builtin_key_model(KeyDistribution dist) {
  // Parsed once per distribution; a shipped file that does not parse is a build error
  // caught by the tests (tests/quality/test_key_model_builtin.cpp), reported here too.
  static const auto parse = [](KeyDistribution d) {
    const std::string stem(to_string(d));
    const std::string_view text = detail::embedded_key_model_text(stem);
    if (text.empty()) throw std::logic_error("models/keys/" + stem + ".json was not embedded in this build");
    KeyModel m = parse_key_model_text(text, stem, "models/keys/" + stem + ".json (built in)");
    require_kind(m, d, "models/keys/" + stem + ".json");
    return m;
  };
  static const KeyModel gaussian = parse(KeyDistribution::gaussian);
  static const KeyModel heavy_tailed = parse(KeyDistribution::heavy_tailed);
  static const KeyModel qwen_bias = parse(KeyDistribution::qwen_bias);
  switch (dist) {
    case KeyDistribution::heavy_tailed:
      return heavy_tailed;
    case KeyDistribution::qwen_bias:
      return qwen_bias;
    default:
      return gaussian;
  }
}

}  // namespace tilepath::numerics
