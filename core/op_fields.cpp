#include "core/op_fields.h"

#include <charconv>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/enum_names.h"

namespace tilepath {
namespace {

using nlohmann::json;

std::string describe(const json& v) {
  std::string text = v.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return std::string(v.type_name()) + " " + text;
}

// Decimal only: "010" is ten, "0x10", "1e3", "" and "12abc" are refused.
int parse_decimal(std::string_view text, const std::string& where, const std::string& allowed) {
  int value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (!text.empty() && text.front() == '+') ++first;
  const auto [end, ec] = std::from_chars(first, last, value, 10);
  if (text.empty() || ec == std::errc::invalid_argument || end != last)
    throw ValidationError(where, "'" + std::string(text) + "' is not a decimal integer", allowed);
  if (ec == std::errc::result_out_of_range)
    throw ValidationError(where, "'" + std::string(text) + "' is out of range", allowed);
  return value;
}

int json_int(const json& v, const std::string& where, const std::string& allowed) {
  if (!v.is_number_integer()) throw ValidationError(where, "expected an integer, got " + describe(v), allowed);
  const auto wide = v.get<std::int64_t>();
  if (wide < std::numeric_limits<int>::min() || wide > std::numeric_limits<int>::max())
    throw ValidationError(where, "integer out of range: " + v.dump(), allowed);
  return static_cast<int>(wide);
}

std::string json_string(const json& v, const std::string& where, const std::string& allowed) {
  if (!v.is_string()) throw ValidationError(where, "expected a string, got " + describe(v), allowed);
  return v.get<std::string>();
}

bool is_power_of_two(int x) { return x > 0 && (x & (x - 1)) == 0; }
bool is_head_dim(int x) { return x == 64 || x == 128 || x == 256; }

// ---- accessors, one per member (function pointers, so the table stays a plain table)

template <int OperatingPoint::*M>
std::string int_text(const OperatingPoint& op) {
  return std::to_string(op.*M);
}
template <int OperatingPoint::*M>
json int_json(const OperatingPoint& op) {
  return op.*M;
}
template <int OperatingPoint::*M>
int int_get(const OperatingPoint& op) {
  return op.*M;
}
template <int OperatingPoint::*M>
void int_set(OperatingPoint& op, int value) {
  op.*M = value;
}
template <int OperatingPoint::*M>
void int_set_text(const OpField& self, OperatingPoint& op, std::string_view text, const std::string& where) {
  const int value = parse_decimal(text, where, self.allowed());
  check_field_int(self, value, where);
  op.*M = value;
}
template <int OperatingPoint::*M>
void int_set_json(const OpField& self, OperatingPoint& op, const json& v, const std::string& where) {
  const int value = json_int(v, where, self.allowed());
  check_field_int(self, value, where);
  op.*M = value;
}

template <typename E, E OperatingPoint::*M>
std::string enum_text(const OperatingPoint& op) {
  return std::string(names::name_of(op.*M));
}
template <typename E, E OperatingPoint::*M>
json enum_json(const OperatingPoint& op) {
  return std::string(names::name_of(op.*M));
}
template <typename E, E OperatingPoint::*M>
void enum_set_text(const OpField&, OperatingPoint& op, std::string_view text, const std::string& where) {
  op.*M = names::parse<E>(text, where);
}
template <typename E, E OperatingPoint::*M>
void enum_set_json(const OpField&, OperatingPoint& op, const json& v, const std::string& where) {
  op.*M = names::parse<E>(json_string(v, where, names::joined(names::all_names<E>())), where);
}
template <typename E>
std::vector<std::string> enum_all() {
  return names::all_names<E>();
}
template <typename E>
std::vector<std::string> enum_any(const OperatingPoint&) {
  return names::all_names<E>();
}

template <typename E>
std::vector<std::string> names_of(const std::vector<E>& values) {
  std::vector<std::string> out;
  for (E v : values) out.emplace_back(names::name_of(v));
  return out;
}
std::vector<std::string> valid_path_names(const OperatingPoint& op) { return names_of(valid_k_paths(op.kv)); }
std::vector<std::string> valid_mode_names(const OperatingPoint& op) { return names_of(valid_modes(op.kv, op.k_path)); }

std::string lengths_text(const OperatingPoint& op) {
  std::string out;
  for (int len : op.context_lengths) out += (out.empty() ? "" : ",") + std::to_string(len);
  return out;
}
json lengths_json(const OperatingPoint& op) { return op.context_lengths; }

void lengths_set_text(const OpField& f, OperatingPoint& op, std::string_view text, const std::string& where) {
  op.context_lengths.clear();
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item = text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    const std::string item_where = where + "[" + std::to_string(op.context_lengths.size()) + "]";
    const int len = parse_decimal(item, item_where, f.allowed());
    check_field_int(f, len, item_where);
    op.context_lengths.push_back(len);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
}

void lengths_set_json(const OpField& f, OperatingPoint& op, const json& v, const std::string& where) {
  if (!v.is_array() || v.empty())
    throw ValidationError(where, "expected a non-empty array of integers, got " + describe(v),
                          "one length per request");
  op.context_lengths.clear();
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string item_where = where + "[" + std::to_string(i) + "]";
    const int len = json_int(v[i], item_where, f.allowed());
    check_field_int(f, len, item_where);
    op.context_lengths.push_back(len);
  }
}

OpField base_field(std::string_view name, std::string_view flag, std::string_view label, std::string_view help,
                   FieldKind kind, EditorWidget widget) {
  OpField f;
  f.name = name;
  f.flag = flag;
  f.label = label;
  f.help = help;
  f.kind = kind;
  f.widget = widget;
  return f;
}

template <int OperatingPoint::*M>
OpField integer(std::string_view name, std::string_view flag, std::string_view label, std::string_view help, int min,
                int max, int nesting) {
  OpField f = base_field(name, flag, label, help, FieldKind::integer, EditorWidget::spin_box);
  f.min = min;
  f.max = max;
  f.sweep_nesting = nesting;
  f.get_text = &int_text<M>;
  f.get_json = &int_json<M>;
  f.get_int = &int_get<M>;
  f.set_int = &int_set<M>;
  f.set_text = &int_set_text<M>;
  f.set_json = &int_set_json<M>;
  return f;
}

template <typename E, E OperatingPoint::*M>
OpField choice(std::string_view name, std::string_view flag, std::string_view label, std::string_view help, int nesting,
               std::vector<std::string> (*valid)(const OperatingPoint&) = &enum_any<E>) {
  OpField f = base_field(name, flag, label, help, FieldKind::choice, EditorWidget::combo_box);
  f.sweep_nesting = nesting;
  f.all_names = &enum_all<E>;
  f.valid_names = valid;
  f.get_text = &enum_text<E, M>;
  f.get_json = &enum_json<E, M>;
  f.set_text = &enum_set_text<E, M>;
  f.set_json = &enum_set_json<E, M>;
  return f;
}

std::vector<OpField> make_table() {
  using OP = OperatingPoint;
  std::vector<OpField> t;
  // Nesting of sweep axes: kv before k_path before mode (their "all" depends on what is
  // set), then the other variant fields, the shape, and batch and context innermost.
  t.push_back(integer<&OP::batch>("batch", "--batch", "Batch B", "requests in the decode batch (B)", 1, 4096, 13));
  t.push_back(integer<&OP::context>("context", "--context", "Context S", "tokens per request (S)", 1, 1 << 20, 14));
  OpField lengths = base_field("context_lengths", "--context-lengths", "Ragged lengths",
                               "ragged batch: one length per request (comma separated; sets --batch when it is not "
                               "given)",
                               FieldKind::integer_list, EditorWidget::line_edit);
  lengths.min = 1;
  lengths.max = 1 << 20;
  lengths.sweep_axis = false;
  lengths.get_text = &lengths_text;
  lengths.get_json = &lengths_json;
  lengths.set_text = &lengths_set_text;
  lengths.set_json = &lengths_set_json;
  t.push_back(lengths);
  t.push_back(integer<&OP::q_heads>("q_heads", "--q-heads", "Q heads Hq", "query heads (Hq)", 1, 256, 8));
  t.push_back(integer<&OP::kv_heads>("kv_heads", "--kv-heads", "KV heads Hk", "KV heads (Hk, divides Hq)", 1, 256, 9));
  OpField head_dim = integer<&OP::head_dim>("head_dim", "--head-dim", "Head dim D", "head dimension", 64, 256, 7);
  head_dim.valid_int = &is_head_dim;
  head_dim.allowed_ints = "64|128|256";
  t.push_back(head_dim);
  OpField page = integer<&OP::page_size>("page_size", "--page-size", "Page size P", "KV page size", 1, 256, 10);
  page.valid_int = &is_power_of_two;
  page.allowed_ints = "1|2|4|8|16|32|64|128|256";
  t.push_back(page);
  t.push_back(choice<KvDtype, &OP::kv>("kv", "--kv", "dtype control", "dtype control (which of K and V are FP8)", 0));
  t.push_back(choice<KPath, &OP::k_path>("k_path", "--k-path", "K path",
                                         "how K reaches the matrix unit (default: the dtype control's)", 1,
                                         &valid_path_names));
  t.push_back(choice<TransformMode, &OP::mode>("mode", "--mode", "Transform mode",
                                               "where FP8 is converted (default: the K path's)", 2, &valid_mode_names));
  t.push_back(choice<KRepr, &OP::k_repr>("k_repr", "--k-repr", "K representation", "K representation", 3));
  t.push_back(choice<RopeLayout, &OP::rope>("rope", "--rope", "RoPE layout", "residual layout for prebias", 4));
  t.push_back(
      choice<ScaleGranularity, &OP::scale>("scale", "--scale", "Scale", "scale granularity of the FP8 cache", 5));
  t.push_back(choice<CacheState, &OP::cache>("cache", "--cache", "Cache state", "cache state when timed", 6));
  OpField splits =
      integer<&OP::splits>("splits", "--splits", "Split-KV", "split-KV count; 0 = the backend chooses", 0, 256, 11);
  splits.special_zero = "auto";
  t.push_back(splits);
  t.push_back(choice<Mma, &OP::mma>("mma", "--mma", "Matrix instruction",
                                    "matrix instruction family of QK and PV (mma_sync: HMMA; wgmma: HGMMA/QGMMA, "
                                    "sm_90a)",
                                    12));
  for (OpField& f : t) {
    f.shape = f.name == "batch" || f.name == "context" || f.name == "q_heads" || f.name == "kv_heads" ||
              f.name == "head_dim" || f.name == "page_size" || f.name == "kv";
    f.variant = f.name == "kv" || f.name == "k_path" || f.name == "mode" || f.name == "k_repr" || f.name == "rope" ||
                f.name == "scale" || f.name == "splits" || f.name == "mma";
  }
  return t;
}

}  // namespace

std::string OpField::allowed() const {
  switch (kind) {
    case FieldKind::choice:
      return names::joined(all_names());
    case FieldKind::integer:
      return !allowed_ints.empty() ? std::string(allowed_ints) : std::to_string(min) + ".." + std::to_string(max);
    case FieldKind::integer_list:
      return "comma-separated integers " + std::to_string(min) + ".." + std::to_string(max) + ", one per request";
  }
  return "";
}

const std::vector<OpField>& op_fields() {
  static const std::vector<OpField> table = make_table();
  return table;
}

const OpField* find_op_field(std::string_view name) {
  for (const OpField& f : op_fields())
    if (f.name == name) return &f;
  return nullptr;
}

std::string op_field_names(bool sweep_axes_only) {
  std::string out;
  for (const OpField& f : op_fields())
    if (!sweep_axes_only || f.sweep_axis) out += (out.empty() ? "" : "|") + std::string(f.name);
  return out;
}

void check_field_int(const OpField& f, int value, const std::string& where) {
  if (value < f.min || value > f.max || (f.valid_int != nullptr && !f.valid_int(value))) {
    const bool in_range = value >= f.min && value <= f.max;
    throw ValidationError(
        where, "value " + std::to_string(value) + (in_range ? " is not supported" : " is out of range"), f.allowed());
  }
}

}  // namespace tilepath
