#pragma once
// LLM attention configurations loaded from models/llms/*.json: the shapes a sweep
// or the UI offers by name ("llama-3.1-8b" -> Hq 32, Hk 8, D 128).

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/operating_point.h"

namespace tilepath::perf {

struct LlmModel {
  std::string id;    // file stem: "qwen2.5-7b"
  std::string name;  // "Qwen2.5 7B"
  int q_heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int layers = 0;
  std::string rope;          // "full" | "partial"
  double rope_fraction = 1;  // share of head_dim that is rotated
  bool has_k_bias = false;
  std::string k_bias_scale;       // qualitative: "none" | "small" | "large" | "unknown"
  std::string source;             // Hugging Face config the numbers come from
  double parameters = 0;          // parameter count; 0 = not stated
  std::string parameters_source;  // where the count comes from
  std::string note;
  std::string file;

  // Memory of the weights stored in BF16 (2 bytes per parameter); 0 when not stated.
  double bf16_weight_bytes() const { return 2.0 * parameters; }
  // op with this model's heads and head dim (other fields kept).
  OperatingPoint apply_to(OperatingPoint op) const;
};

// Throws std::runtime_error naming the file and field.
LlmModel parse_llm_model(const nlohmann::json& j, const std::string& id, const std::string& file);
LlmModel load_llm_model_file(const std::string& path);
// dir is a models directory (see models_dir() in gpu_model.h); reads dir/llms/*.json.
std::vector<LlmModel> load_llm_models(const std::string& dir);
LlmModel load_llm_model(const std::string& id, const std::string& dir);  // throws listing known ids

}  // namespace tilepath::perf
