#pragma once
// The operating point's fields, each stated once: its name (the JSON key, the sweep
// axis and the field a ValidationError names), CLI flag, kind, allowed values or
// range, help text, and the GUI label and editor widget. JSON (to_json /
// operating_point_from_json), sweep specs, the CLI's operating-point flags,
// OperatingPoint::problems() and the GUI's editor are all built from this table, so
// a new field is one entry here and one member of OperatingPoint.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/operating_point.h"

namespace tilepath {

enum class FieldKind {
  integer,       // one int in [min, max] that passes valid_int
  choice,        // one name of an enumeration
  integer_list,  // context_lengths: one int per request, each in [min, max]
};
enum class EditorWidget { spin_box, combo_box, line_edit };

struct OpField {
  std::string_view name;   // "batch"
  std::string_view flag;   // "--batch"
  std::string_view label;  // "Batch B" (the GUI's row label)
  std::string_view help;   // the CLI's help text
  FieldKind kind = FieldKind::integer;
  EditorWidget widget = EditorWidget::spin_box;
  int min = 0, max = 0;              // integer and integer_list: the range
  bool (*valid_int)(int) = nullptr;  // integer: a further condition (nullptr: the range only)
  std::string_view allowed_ints;     // integer: the allowed values as shown ("64|128|256"); "" = "min..max"
  std::string_view special_zero;     // integer: what 0 means, shown by the editor ("auto")
  bool shape = false;                // required by `tilepath run` (the case's shape and dtype)
  bool sweep_axis = true;            // may be an axis of a sweep spec (not context_lengths)
  int sweep_nesting = 0;             // axes nest in this order (lowest varies slowest)
  // A choice a serving engine makes for the same work (how the cache is stored and
  // consumed: kv, k_path, mode, k_repr, rope, scale, splits, mma), as opposed to the point it
  // is asked about (batch, context, heads, head dim, page size, cache state). Dispatch
  // chooses among variants per point.
  bool variant = false;

  // choice: every name, and the names valid given the other fields of op (k_path and
  // mode depend on kv; the rest allow every name).
  std::vector<std::string> (*all_names)() = nullptr;
  std::vector<std::string> (*valid_names)(const OperatingPoint& op) = nullptr;

  // The field of op as text ("64", "k8v8", "100,2000"), as JSON, and (integer) as int.
  std::string (*get_text)(const OperatingPoint& op) = nullptr;
  nlohmann::json (*get_json)(const OperatingPoint& op) = nullptr;
  int (*get_int)(const OperatingPoint& op) = nullptr;
  void (*set_int)(OperatingPoint& op, int value) = nullptr;  // integer: as is, unchecked (an editor's value)
  // Set the field from text (decimal integers only; names as spelled) or from JSON,
  // checking the value's type and its own range; cross-field rules are validate()'s.
  // Throw ValidationError naming `where` (a flag, a JSON path) and the allowed values.
  void (*set_text)(const OpField& self, OperatingPoint& op, std::string_view text, const std::string& where) = nullptr;
  void (*set_json)(const OpField& self, OperatingPoint& op, const nlohmann::json& value,
                   const std::string& where) = nullptr;
  void parse_text(OperatingPoint& op, std::string_view text, const std::string& where) const {
    set_text(*this, op, text, where);
  }
  void parse_json(OperatingPoint& op, const nlohmann::json& value, const std::string& where) const {
    set_json(*this, op, value, where);
  }

  // The allowed values as an error message shows them: "1..4096", "k16v16|k8v16|k16v8|k8v8".
  std::string allowed() const;
  // The default value's text (the field of OperatingPoint{}).
  std::string default_text() const { return get_text(OperatingPoint{}); }
};

// Every field, in the order the CLI help and the GUI editor list them.
const std::vector<OpField>& op_fields();
// The field called name, or nullptr.
const OpField* find_op_field(std::string_view name);
// "batch|context|..." (for "unknown field" messages).
std::string op_field_names(bool sweep_axes_only = false);

// Checks an integer against a field's range and condition; throws ValidationError
// naming `where` and the field's allowed values.
void check_field_int(const OpField& f, int value, const std::string& where);

}  // namespace tilepath
