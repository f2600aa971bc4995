#pragma once
// What the GPU and LLM description loaders share: reading one JSON file of
// models/, listing a models/ sub-folder, and errors that name file and field.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tilepath::perf {

// Throws std::runtime_error "<file>: field '<field>': <problem>".
[[noreturn]] void fail_field(const std::string& file, const std::string& field, const std::string& problem);

// The parsed file; `kind` names it in errors ("GPU model", "LLM model").
nlohmann::json read_model_json(const std::string& path, const char* kind);

// The *.json files of dir/sub, sorted (stable device order); throws if the folder is missing.
std::vector<std::string> model_files(const std::string& dir, const char* sub);

// A required non-empty string field.
std::string read_string_field(const nlohmann::json& j, const std::string& key, const std::string& file);

}  // namespace tilepath::perf
