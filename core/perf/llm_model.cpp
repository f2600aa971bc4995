#include "core/perf/llm_model.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/perf/model_file.h"

namespace tilepath::perf {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

[[noreturn]] void fail(const std::string& file, const std::string& field, const std::string& problem) {
  fail_field(file, field, problem);
}

const json& require(const json& j, const std::string& key, const std::string& file, const char* what) {
  if (!j.contains(key)) fail(file, key, std::string("missing (") + what + ")");
  return j[key];
}

int read_positive_int(const json& j, const std::string& key, const std::string& file) {
  const json& v = require(j, key, file, "a positive integer");
  if (!v.is_number_integer() || v.get<long long>() <= 0) fail(file, key, "must be a positive integer, got " + v.dump());
  return v.get<int>();
}

std::string read_string(const json& j, const std::string& key, const std::string& file,
                        const std::vector<std::string>& allowed = {}) {
  const std::string s = read_string_field(j, key, file);
  if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : "|") + a;
    fail(file, key, "'" + s + "' is not allowed; allowed: " + list);
  }
  return s;
}

}  // namespace

OperatingPoint LlmModel::apply_to(OperatingPoint op) const {
  op.q_heads = q_heads;
  op.kv_heads = kv_heads;
  op.head_dim = head_dim;
  return op;
}

LlmModel parse_llm_model(const json& j, const std::string& id, const std::string& file) {
  if (!j.is_object()) throw std::runtime_error(file + ": the top level must be a JSON object");
  LlmModel m;
  m.id = id;
  m.file = file;
  m.name = read_string(j, "name", file);
  m.q_heads = read_positive_int(j, "q_heads", file);
  m.kv_heads = read_positive_int(j, "kv_heads", file);
  if (m.q_heads % m.kv_heads != 0) {
    fail(file, "kv_heads", std::to_string(m.kv_heads) + " does not divide q_heads " + std::to_string(m.q_heads));
  }
  m.head_dim = read_positive_int(j, "head_dim", file);
  m.layers = read_positive_int(j, "layers", file);
  m.rope = read_string(j, "rope", file, {"full", "partial"});
  const json& fraction = require(j, "rope_fraction", file, "a number in (0, 1]");
  if (!fraction.is_number() || fraction.get<double>() <= 0 || fraction.get<double>() > 1) {
    fail(file, "rope_fraction", "must be a number in (0, 1], got " + fraction.dump());
  }
  m.rope_fraction = fraction.get<double>();
  if ((m.rope == "full") != (m.rope_fraction == 1.0)) {
    fail(file, "rope_fraction", "must be 1 exactly when rope is 'full'");
  }
  const json& bias = require(j, "has_k_bias", file, "true/false");
  if (!bias.is_boolean()) fail(file, "has_k_bias", "must be true or false");
  m.has_k_bias = bias.get<bool>();
  m.k_bias_scale = read_string(j, "k_bias_scale", file, {"none", "small", "large", "unknown"});
  if (!m.has_k_bias && m.k_bias_scale != "none") fail(file, "k_bias_scale", "must be 'none' when has_k_bias is false");
  m.source = read_string(j, "source", file);
  if (j.contains("parameters")) {
    const json& params = j["parameters"];
    if (!params.is_object() || !params.contains("value") || !params["value"].is_number() ||
        params["value"].get<double>() <= 0)
      fail(file, "parameters", "must be an object with a positive number 'value' and a 'source'");
    m.parameters = params["value"].get<double>();
    m.parameters_source = read_string(params, "source", file);
  }
  if (j.contains("note")) {
    if (!j["note"].is_string()) fail(file, "note", "must be a string");
    m.note = j["note"].get<std::string>();
  }
  return m;
}

LlmModel load_llm_model_file(const std::string& path) {
  return parse_llm_model(read_model_json(path, "LLM model"), fs::path(path).stem().string(), path);
}

std::vector<LlmModel> load_llm_models(const std::string& dir) {
  std::vector<LlmModel> out;
  for (const auto& f : model_files(dir, "llms")) out.push_back(load_llm_model_file(f));
  return out;
}

LlmModel load_llm_model(const std::string& id, const std::string& dir) {
  const auto files = model_files(dir, "llms");
  std::string known;
  for (const auto& f : files) {
    const std::string stem = fs::path(f).stem().string();
    if (stem == id) return load_llm_model_file(f);
    known += (known.empty() ? "" : ", ") + stem;
  }
  throw std::runtime_error("llm: unknown LLM model '" + id + "'; allowed: " + known);
}

}  // namespace tilepath::perf
