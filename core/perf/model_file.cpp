#include "core/perf/model_file.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "core/json_input.h"

namespace fs = std::filesystem;

namespace tilepath::perf {

void fail_field(const std::string& file, const std::string& field, const std::string& problem) {
  throw std::runtime_error(file + ": field '" + field + "': " + problem);
}

nlohmann::json read_model_json(const std::string& path, const char* kind) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open " + kind + " file");
  try {
    return parse_json_input(in, path);
  } catch (const JsonInputError& e) {
    throw std::runtime_error(path + ": not valid JSON: " + e.problem);
  }
}

std::vector<std::string> model_files(const std::string& dir, const char* sub) {
  const fs::path folder = fs::path(dir) / sub;
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) throw std::runtime_error(folder.string() + ": not a directory");
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string read_string_field(const nlohmann::json& j, const std::string& key, const std::string& file) {
  if (!j.contains(key)) fail_field(file, key, "missing (a non-empty string)");
  if (!j[key].is_string() || j[key].get<std::string>().empty()) fail_field(file, key, "must be a non-empty string");
  return j[key].get<std::string>();
}

}  // namespace tilepath::perf
