#pragma once
// One decode-attention case: shape, cache format and the way the kernel consumes it.

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "backends/abi/tilepath_backend.h"

namespace tilepath {

enum class KvDtype { k16v16 = TP_KV_K16V16, k8v16 = TP_KV_K8V16, k16v8 = TP_KV_K16V8, k8v8 = TP_KV_K8V8 };
enum class KPath { transform = TP_KPATH_TRANSFORM, fp8_qk = TP_KPATH_FP8_QK, k16 = TP_KPATH_K16 };
enum class TransformMode {
  none = TP_MODE_NONE,
  full = TP_MODE_FULL,
  k_only = TP_MODE_K_ONLY,
  separate_kv = TP_MODE_SEPARATE_KV
};
enum class KRepr { plain = TP_KREPR_PLAIN, prebias = TP_KREPR_PREBIAS, mxfp8 = TP_KREPR_MXFP8 };
enum class RopeLayout { post_rope = TP_ROPE_POST, pre_rope = TP_ROPE_PRE };
enum class ScaleGranularity { per_tensor = TP_SCALE_PER_TENSOR, per_head = TP_SCALE_PER_HEAD };
enum class CacheState { l2_warm = TP_CACHE_L2_WARM, hbm_cold = TP_CACHE_HBM_COLD };
// The matrix instruction family QK and PV are issued on (tp_mma): mma_sync (HMMA; on sm_90a
// mma.sync e4m3 is lowered to F16 HMMA plus F2FP conversions) or wgmma (HGMMA/QGMMA).
enum class Mma { mma_sync = TP_MMA_MMA_SYNC, wgmma = TP_MMA_WGMMA };

// Names as written on the command line, in specs and in the database.
std::string_view to_string(KvDtype v);
std::string_view to_string(KPath v);
std::string_view to_string(TransformMode v);
std::string_view to_string(KRepr v);
std::string_view to_string(RopeLayout v);
std::string_view to_string(ScaleGranularity v);
std::string_view to_string(CacheState v);
std::string_view to_string(Mma v);

// Parse a name; throws ValidationError naming `field` and the allowed values.
KvDtype parse_kv_dtype(std::string_view s, std::string_view field = "kv");
KPath parse_k_path(std::string_view s, std::string_view field = "k_path");
TransformMode parse_transform_mode(std::string_view s, std::string_view field = "mode");
KRepr parse_k_repr(std::string_view s, std::string_view field = "k_repr");
RopeLayout parse_rope_layout(std::string_view s, std::string_view field = "rope");
ScaleGranularity parse_scale_granularity(std::string_view s, std::string_view field = "scale");
CacheState parse_cache_state(std::string_view s, std::string_view field = "cache");
Mma parse_mma(std::string_view s, std::string_view field = "mma");

bool k_is_fp8(KvDtype v);
bool v_is_fp8(KvDtype v);

// A bad field: what() reads "<field>: <problem>; allowed: <values>".
class ValidationError : public std::runtime_error {
 public:
  ValidationError(std::string field, const std::string& problem, const std::string& allowed);
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

struct OperatingPoint {
  int batch = 64;
  int context = 4096;                // tokens per request
  std::vector<int> context_lengths;  // optional ragged batch; size == batch when set
  int q_heads = 32;
  int kv_heads = 8;
  int head_dim = 128;
  int page_size = 16;
  KvDtype kv = KvDtype::k8v8;
  KPath k_path = KPath::transform;
  TransformMode mode = TransformMode::full;
  KRepr k_repr = KRepr::plain;
  RopeLayout rope = RopeLayout::post_rope;
  ScaleGranularity scale = ScaleGranularity::per_head;
  CacheState cache = CacheState::hbm_cold;
  int splits = 0;  // split-KV count; 0 = auto
  Mma mma = Mma::mma_sync;

  int gqa_ratio() const { return q_heads / kv_heads; }
  long long total_tokens() const;  // sum of per-request lengths
  int max_context() const;

  // Throws ValidationError for the first bad field.
  void validate() const;
  // All problems, one message each (empty = valid). Used by the GUI to mark fields.
  std::vector<ValidationError> problems() const;

  // Minimum HBM bytes one decode step must move: K and V caches once (at their
  // storage width), Q read and O written in BF16, scales and page table.
  double bytes_moved() const;

  // Short label, e.g. "k8v8/transform/full" ("/prebias", "/wgmma" when not the default)
  std::string variant_label() const;
  // Stable identity of the case for sweep resume and dedup (all fields). mma is spelled
  // only when it is not mma_sync, so the keys stored before the field existed still name
  // their cases.
  std::string key() const;

  bool operator==(const OperatingPoint&) const = default;
};

// A post-RoPE prebias FP8-K cache: its exact bias comes back in score space, q.RoPE_t(b)
// added after QK (the k_bias stage); a pre-RoPE one restores it into K inside k_prep.
bool restores_bias_in_scores(const OperatingPoint& op);

// Valid K paths and modes for a dtype control (used for validation, sweeps and UI menus).
std::vector<KPath> valid_k_paths(KvDtype kv);
std::vector<TransformMode> valid_modes(KvDtype kv, KPath path);
// The K path / mode used when the user does not name one.
KPath default_k_path(KvDtype kv);
TransformMode default_mode(KvDtype kv, KPath path);

// A K path / mode that was not given follows the dtype control's (and path's) default.
void apply_path_defaults(OperatingPoint& op, bool k_path_given, bool mode_given);

// JSON (the field table's names, core/op_fields.h). from_json checks each field's type
// and range and throws ValidationError naming the field; cross-field rules are validate()'s.
nlohmann::json to_json(const OperatingPoint& op);
OperatingPoint operating_point_from_json(const nlohmann::json& j);

// Fill a C ABI case (lengths pointer borrows op.context_lengths).
tp_case to_tp_case(const OperatingPoint& op, const char* gpu_model = nullptr);
OperatingPoint from_tp_case(const tp_case& c);

}  // namespace tilepath
