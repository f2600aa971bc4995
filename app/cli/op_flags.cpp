#include "app/cli/op_flags.h"

#include "core/op_fields.h"

#include <sstream>

namespace tilepath::cli {
namespace {

bool given(const CLI::App* sub, std::string_view flag) { return sub->get_option(std::string(flag))->count() > 0; }

constexpr const char* kGroup = "Operating point";  // every flag add_op_flags registers

}  // namespace

void add_op_flags(CLI::App* sub, OpFlags& f, bool shape_required) {
  f.sub = sub;
  for (const OpField& field : op_fields()) {
    std::string help = std::string(field.help) + "; " + field.allowed();
    CLI::Option* o = sub->add_option(std::string(field.flag), f.text[std::string(field.name)], help)->group(kGroup);
    o->type_name(field.kind == FieldKind::integer ? "INT" : field.kind == FieldKind::choice ? "NAME" : "L1,L2,...");
    if (shape_required && field.shape)
      o->required();
    else if (field.name != "k_path" && field.name != "mode" && field.kind != FieldKind::integer_list)
      o->default_str(field.get_text(f.defaults));
  }
}

std::vector<std::string> given_op_flags(const OpFlags& f) {
  std::vector<std::string> names;
  for (const CLI::Option* o : f.sub->get_options())
    if (o->get_group() == kGroup && o->count() > 0) names.push_back(o->get_name());
  return names;
}

OperatingPoint build_operating_point(const OpFlags& f) {
  OperatingPoint op = f.defaults;
  for (const OpField& field : op_fields())
    if (given(f.sub, field.flag)) field.parse_text(op, f.text.at(std::string(field.name)), std::string(field.flag));
  if (given(f.sub, "--context-lengths") && !given(f.sub, "--batch"))
    op.batch = static_cast<int>(op.context_lengths.size());
  apply_path_defaults(op, given(f.sub, "--k-path"), given(f.sub, "--mode"));
  op.validate();
  return op;
}

std::string describe_case(const OperatingPoint& op) {
  std::ostringstream s;
  s << op.variant_label() << " B=" << op.batch << " S=";
  if (op.context_lengths.empty()) {
    s << op.context;
  } else {
    s << "ragged(max " << op.max_context() << ")";
  }
  s << " Hq/Hk=" << op.q_heads << "/" << op.kv_heads << " D=" << op.head_dim << " P=" << op.page_size << " "
    << to_string(op.cache);
  if (op.k_repr != KRepr::plain) s << " " << to_string(op.k_repr) << "/" << to_string(op.rope);
  if (op.splits > 0) s << " splits=" << op.splits;
  return s.str();
}

}  // namespace tilepath::cli
