#pragma once
// The names of core's enumerations, read from the one table of the ABI
// (backends/abi/tilepath_names.h): to_string, parsing and the allowed-values text.

#include <string>
#include <string_view>
#include <vector>

#include "backends/abi/tilepath_names.h"
#include "core/operating_point.h"
#include "core/stage.h"

namespace tilepath::names {

template <typename E>
struct Table;
#define TILEPATH_NAME_TABLE(Enum, array)               \
  template <>                                          \
  struct Table<Enum> {                                 \
    static constexpr const char* const* names = array; \
    static constexpr int count = TP_NAME_COUNT(array); \
  };
TILEPATH_NAME_TABLE(KvDtype, tp_kv_dtype_names)
TILEPATH_NAME_TABLE(KPath, tp_k_path_names)
TILEPATH_NAME_TABLE(TransformMode, tp_transform_mode_names)
TILEPATH_NAME_TABLE(KRepr, tp_k_repr_names)
TILEPATH_NAME_TABLE(RopeLayout, tp_rope_layout_names)
TILEPATH_NAME_TABLE(ScaleGranularity, tp_scale_granularity_names)
TILEPATH_NAME_TABLE(CacheState, tp_cache_state_names)
TILEPATH_NAME_TABLE(Mma, tp_mma_names)
TILEPATH_NAME_TABLE(Stage, tp_stage_names)
TILEPATH_NAME_TABLE(CostMethod, tp_cost_method_names)
#undef TILEPATH_NAME_TABLE

template <typename E>
std::string_view name_of(E value) {
  const int i = static_cast<int>(value);
  return i >= 0 && i < Table<E>::count ? std::string_view(Table<E>::names[i]) : std::string_view("?");
}

template <typename E>
std::vector<std::string> all_names() {
  return {Table<E>::names, Table<E>::names + Table<E>::count};
}

// "k16v16|k8v16|k16v8|k8v8"
inline std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : "|") + n;
  return out;
}

// The value named s; throws ValidationError naming field and the allowed names.
template <typename E>
E parse(std::string_view s, std::string_view field) {
  for (int i = 0; i < Table<E>::count; ++i)
    if (s == Table<E>::names[i]) return static_cast<E>(i);
  throw ValidationError(std::string(field), "unknown value '" + std::string(s) + "'", joined(all_names<E>()));
}

}  // namespace tilepath::names
