#include "app/cli/op_flags.h"

#include <sstream>

namespace tilepath::cli {
namespace {

bool given(const CLI::App* sub, const char* name) { return sub->get_option(name)->count() > 0; }

constexpr const char* kGroup = "Operating point";  // every flag add_op_flags registers

}  // namespace

void add_op_flags(CLI::App* sub, OpFlags& f, bool shape_required) {
  f.sub = sub;
  const OperatingPoint& d = f.defaults;
  auto shape = [&](const char* name, int& target, const char* help, int default_value) {
    CLI::Option* o = sub->add_option(name, target, help)->group(kGroup);
    if (shape_required)
      o->required();
    else
      o->default_str(std::to_string(default_value));
  };
  shape("--batch", f.batch, "requests in the decode batch (B)", d.batch);
  shape("--context", f.context, "tokens per request (S)", d.context);
  shape("--q-heads", f.q_heads, "query heads (Hq)", d.q_heads);
  shape("--kv-heads", f.kv_heads, "KV heads (Hk, divides Hq)", d.kv_heads);
  shape("--head-dim", f.head_dim, "head dimension: 64, 128, 256", d.head_dim);
  shape("--page-size", f.page_size, "KV page size: power of two 1..256", d.page_size);
  CLI::Option* kv = sub->add_option("--kv", f.kv, "dtype control: k16v16, k8v16, k16v8, k8v8")->group(kGroup);
  if (shape_required)
    kv->required();
  else
    kv->default_str(std::string(to_string(d.kv)));
  sub->add_option("--context-lengths", f.context_lengths, "ragged batch: one length per request (comma separated)")
      ->delimiter(',')
      ->group(kGroup);
  sub->add_option("--k-path", f.k_path, "transform, fp8_qk, k16 (default: the dtype control's default)")->group(kGroup);
  sub->add_option("--mode", f.mode, "none, full, k_only, separate_kv (default: the path's default)")->group(kGroup);
  sub->add_option("--cache", f.cache, "l2_warm, hbm_cold")->default_str(std::string(to_string(d.cache)))->group(kGroup);
  sub->add_option("--k-repr", f.k_repr, "plain, prebias")->default_str(std::string(to_string(d.k_repr)))->group(kGroup);
  sub->add_option("--scale", f.scale, "per_tensor, per_head")
      ->default_str(std::string(to_string(d.scale)))
      ->group(kGroup);
  sub->add_option("--rope", f.rope, "post_rope, pre_rope")->default_str(std::string(to_string(d.rope)))->group(kGroup);
  sub->add_option("--splits", f.splits, "split-KV count; 0 = backend chooses")->default_str("0")->group(kGroup);
}

std::vector<std::string> given_op_flags(const OpFlags& f) {
  std::vector<std::string> names;
  for (const CLI::Option* o : f.sub->get_options())
    if (o->get_group() == kGroup && o->count() > 0) names.push_back(o->get_name());
  return names;
}

OperatingPoint build_operating_point(const OpFlags& f) {
  OperatingPoint op = f.defaults;
  const CLI::App* sub = f.sub;
  if (given(sub, "--batch")) op.batch = f.batch;
  if (given(sub, "--context")) op.context = f.context;
  if (given(sub, "--q-heads")) op.q_heads = f.q_heads;
  if (given(sub, "--kv-heads")) op.kv_heads = f.kv_heads;
  if (given(sub, "--head-dim")) op.head_dim = f.head_dim;
  if (given(sub, "--page-size")) op.page_size = f.page_size;
  if (given(sub, "--splits")) op.splits = f.splits;
  if (given(sub, "--context-lengths")) {
    op.context_lengths = f.context_lengths;
    if (!given(sub, "--batch")) op.batch = static_cast<int>(f.context_lengths.size());
  }
  if (given(sub, "--kv")) op.kv = parse_kv_dtype(f.kv, "--kv");
  op.k_path = given(sub, "--k-path") ? parse_k_path(f.k_path, "--k-path") : default_k_path(op.kv);
  op.mode = given(sub, "--mode") ? parse_transform_mode(f.mode, "--mode") : default_mode(op.kv, op.k_path);
  if (given(sub, "--cache")) op.cache = parse_cache_state(f.cache, "--cache");
  if (given(sub, "--k-repr")) op.k_repr = parse_k_repr(f.k_repr, "--k-repr");
  if (given(sub, "--scale")) op.scale = parse_scale_granularity(f.scale, "--scale");
  if (given(sub, "--rope")) op.rope = parse_rope_layout(f.rope, "--rope");
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
