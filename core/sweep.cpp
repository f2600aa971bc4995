// Sweep specs: parsing with JSON-path errors, cartesian expansion, resumable runs.
// The format is documented in docs/sweep-spec.md.

#include "core/sweep.h"

#include "core/json_input.h"
#include "core/numerics/decode_problem.h"
#include "core/op_fields.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace tilepath {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& path, const std::string& problem, const std::string& allowed) {
  throw ValidationError(path, problem, allowed);
}

std::string describe(const json& v) {
  std::string text = v.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return std::string(v.type_name()) + " " + text;
}

int as_int(const json& v, const std::string& path, const std::string& allowed) {
  if (!v.is_number_integer()) fail(path, "expected an integer, got " + describe(v), allowed);
  auto wide = v.get<std::int64_t>();
  if (wide < std::numeric_limits<int>::min() || wide > std::numeric_limits<int>::max())
    fail(path, "integer out of range: " + v.dump(), allowed);
  return static_cast<int>(wide);
}

std::string as_string(const json& v, const std::string& path, const std::string& allowed) {
  if (!v.is_string()) fail(path, "expected a string, got " + describe(v), allowed);
  return v.get<std::string>();
}

bool as_bool(const json& v, const std::string& path) {
  if (!v.is_boolean()) fail(path, "expected true or false, got " + describe(v), "true, false");
  return v.get<bool>();
}

const json& as_object(const json& v, const std::string& path, const std::string& allowed) {
  if (!v.is_object()) fail(path, "expected an object, got " + describe(v), allowed);
  return v;
}

// Which of k_path / mode the spec fixes; the others follow the dtype control.
struct Explicit {
  bool k_path = false;
  bool mode = false;
};

// base, or one entry of points (named by path): operating-point fields over op.
void parse_point(const json& point, const std::string& path, OperatingPoint& op, Explicit& given) {
  as_object(point, path, "an object of operating-point fields: " + op_field_names());
  for (const auto& [key, value] : point.items()) {
    const OpField* f = find_op_field(key);
    if (f == nullptr) fail(path + "." + key, "unknown field", op_field_names());
    f->parse_json(op, value, path + "." + key);
    if (key == "k_path") given.k_path = true;
    if (key == "mode") given.mode = true;
  }
}

void parse_base(const json& base, OperatingPoint& op, Explicit& given) { parse_point(base, "base", op, given); }

// An axis: a field and either explicit values or "all".
struct Axis {
  const OpField* field;
  bool all = false;
  std::vector<json> values;
  std::string path;
};

std::vector<Axis> parse_axes(const json& axes, Explicit& given) {
  as_object(axes, "axes", "an object mapping field names to lists: " + op_field_names(true));
  std::vector<Axis> out;
  for (const auto& [key, value] : axes.items()) {
    std::string path = "axes." + key;
    const OpField* f = find_op_field(key);
    if (f == nullptr || !f->sweep_axis) fail(path, "unknown axis", op_field_names(true));
    Axis axis{f, false, {}, path};
    const std::string allowed = f->allowed() + (f->kind == FieldKind::choice ? " (or \"all\")" : "");
    if (value.is_string() && value.get<std::string>() == "all") {
      if (f->kind != FieldKind::choice)
        fail(path, "\"all\" is only accepted for enum axes", "a non-empty list of " + allowed);
      axis.all = true;
    } else if (value.is_array()) {
      if (value.empty()) fail(path, "empty axis", "a non-empty list of " + allowed);
      std::set<std::string> seen;
      for (std::size_t i = 0; i < value.size(); ++i) {
        std::string item_path = path + "[" + std::to_string(i) + "]";
        OperatingPoint probe;
        f->parse_json(probe, value[i], item_path);  // type and range check now, with the item's path
        if (!seen.insert(value[i].dump()).second) fail(item_path, "duplicate value " + value[i].dump(), allowed);
        axis.values.push_back(value[i]);
      }
    } else {
      // A scalar is a one-value axis; validated the same way.
      OperatingPoint probe;
      f->parse_json(probe, value, path);
      axis.values.push_back(value);
    }
    if (key == "k_path") given.k_path = true;
    if (key == "mode") given.mode = true;
    out.push_back(std::move(axis));
  }
  // Nest in the field table's sweep order so dependent "all" axes see their inputs.
  std::stable_sort(out.begin(), out.end(),
                   [](const Axis& a, const Axis& b) { return a.field->sweep_nesting < b.field->sweep_nesting; });
  return out;
}

void expand(const std::vector<Axis>& axes, std::size_t level, OperatingPoint op, const Explicit& given, SweepSpec& spec,
            std::set<std::string>& keys) {
  apply_path_defaults(op, given.k_path, given.mode);
  if (level == axes.size()) {
    if (const std::vector<ValidationError> problems = op.problems(); !problems.empty()) {
      if (spec.skipped_invalid++ == 0) spec.first_invalid = problems.front().what();
      return;
    }
    if (keys.insert(op.key()).second) spec.cases.push_back(op);
    return;
  }
  const Axis& axis = axes[level];
  if (axis.all) {
    std::vector<std::string> all = axis.field->valid_names(op);
    if (all.empty() && spec.skipped_invalid++ == 0)  // e.g. mode "all" under a path invalid for this kv
      spec.first_invalid = axis.path + ": no valid value for " + op.variant_label();
    for (const std::string& name : all) {
      OperatingPoint next = op;
      axis.field->parse_text(next, name, axis.path);
      expand(axes, level + 1, next, given, spec, keys);
    }
    return;
  }
  for (const json& v : axis.values) {
    OperatingPoint next = op;
    axis.field->parse_json(next, v, axis.path);
    expand(axes, level + 1, next, given, spec, keys);
  }
}

// Spreads one case's own progress over its share of the whole sweep.
class SweepProgress final : public ProgressObserver {
 public:
  SweepProgress(ProgressObserver* outer, int total) : outer_(outer), total_(total) {}
  void set_case(int index, std::string label) {
    index_ = index;
    label_ = std::move(label);
  }
  void progress(double fraction, const std::string& label) override {
    if (outer_ == nullptr) return;
    double overall = total_ > 0 ? (index_ + fraction) / total_ : 1.0;
    outer_->progress(overall, label.empty() ? label_ : label);
  }
  bool cancelled() const override { return outer_ != nullptr && outer_->cancelled(); }

 private:
  ProgressObserver* outer_;
  int total_;
  int index_ = 0;
  std::string label_;
};

}  // namespace

std::string sweep_case_label(const OperatingPoint& op, int index, int total) {
  return "case " + std::to_string(index + 1) + "/" + std::to_string(total) + " " + case_label(op);
}

void parse_run_settings(const json& s, RunSettings& settings) {
  const std::string allowed_keys =
      "device, warmup, repeats, stage_costs, tile_interval, seed, keys, gpu_model, save_tensors_dir";
  as_object(s, "settings", "an object with " + allowed_keys);
  for (const auto& [key, value] : s.items()) {
    std::string path = "settings." + key;
    if (key == "device") {
      settings.device = as_int(value, path, "integers >= 0");
      if (settings.device < 0) fail(path, "must be >= 0", "integers >= 0");
    } else if (key == "warmup") {
      const std::string allowed = "integers 0.." + std::to_string(kMaxLaunches);
      settings.warmup = as_int(value, path, allowed);
      if (settings.warmup < 0 || settings.warmup > kMaxLaunches) fail(path, "out of range", allowed);
    } else if (key == "repeats") {
      const std::string allowed = "integers 1.." + std::to_string(kMaxLaunches);
      settings.repeats = as_int(value, path, allowed);
      if (settings.repeats < 1 || settings.repeats > kMaxLaunches) fail(path, "out of range", allowed);
    } else if (key == "stage_costs") {
      settings.stage_costs = as_bool(value, path);
    } else if (key == "tile_interval") {
      settings.tile_interval = as_bool(value, path);
    } else if (key == "seed") {
      if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<std::int64_t>() >= 0))
        fail(path, "expected a non-negative integer, got " + describe(value), "integers >= 0 (0 = fresh per case)");
      settings.seed = value.get<std::uint64_t>();
    } else if (key == "keys") {
      const std::string name = as_string(value, path, "gaussian|heavy_tailed|qwen_bias");
      settings.key_distribution = std::string(numerics::to_string(numerics::parse_key_distribution(name, path)));
    } else if (key == "gpu_model") {
      settings.gpu_model = as_string(value, path, "a GPU model id from models/gpus (e.g. h200)");
      if (settings.gpu_model.empty()) fail(path, "empty string", "a GPU model id from models/gpus (e.g. h200)");
    } else if (key == "save_tensors_dir") {
      settings.save_tensors_dir = as_string(value, path, "a directory path");
    } else {
      fail(path, "unknown setting", allowed_keys);
    }
  }
}

SweepSpec parse_sweep_spec(const json& j, std::int64_t max_cases) {
  const std::string top_keys = "name, description, backend, settings, base, points, axes";
  as_object(j, "spec", "a JSON object with " + top_keys);
  SweepSpec spec;
  OperatingPoint base;
  Explicit given;
  std::vector<Axis> axes;
  for (const auto& [key, value] : j.items()) {
    if (key == "name") {
      spec.name = as_string(value, "name", "a string");
    } else if (key == "description") {
      as_string(value, "description", "a string");
    } else if (key == "backend") {
      spec.backend = as_string(value, "backend", "a backend plugin name (see `tilepath backends`)");
    } else if (key == "settings") {
      parse_run_settings(value, spec.settings);
    } else if (key == "base") {
      parse_base(value, base, given);
    } else if (key != "axes" && key != "points") {
      fail(key, "unknown key", top_keys);
    }
  }
  // points: base variations, each crossed with the axes (base itself when there are none).
  std::vector<std::pair<OperatingPoint, Explicit>> starts;
  if (j.contains("points")) {
    const json& points = j.at("points");
    if (!points.is_array() || points.empty())
      fail("points", "expected a non-empty list, got " + describe(points),
           "a list of objects of operating-point fields, each overriding base");
    for (std::size_t i = 0; i < points.size(); ++i) {
      OperatingPoint op = base;
      Explicit point_given = given;
      parse_point(points[i], "points[" + std::to_string(i) + "]", op, point_given);
      starts.emplace_back(op, point_given);
    }
  } else {
    starts.emplace_back(base, given);
  }
  // axes last: their "all" values depend on base.
  Explicit given_by_axes;
  if (j.contains("axes")) axes = parse_axes(j.at("axes"), given_by_axes);
  // Counted before expanding (saturating: the product of a few long axes overflows).
  std::int64_t combinations = static_cast<std::int64_t>(starts.size());
  for (const Axis& axis : axes) {
    // An "all" axis counts every name of its field (its valid subset depends on the case).
    const auto n = static_cast<std::int64_t>(axis.all ? axis.field->all_names().size() : axis.values.size());
    combinations = combinations > std::numeric_limits<std::int64_t>::max() / std::max<std::int64_t>(n, 1)
                       ? std::numeric_limits<std::int64_t>::max()
                       : combinations * n;
  }
  if (combinations > max_cases)
    fail("axes",
         "expands to " +
             (combinations == std::numeric_limits<std::int64_t>::max() ? std::string("more than 2^63")
                                                                       : std::to_string(combinations)) +
             " combinations, more than the limit of " + std::to_string(max_cases),
         "at most " + std::to_string(max_cases) + " combinations (tilepath sweep --max-cases N raises the limit)");

  std::set<std::string> keys;
  for (auto& [start, start_given] : starts) {
    // An axis naming k_path or mode counts for every point.
    Explicit g = start_given;
    g.k_path = g.k_path || given_by_axes.k_path;
    g.mode = g.mode || given_by_axes.mode;
    expand(axes, 0, start, g, spec, keys);
  }
  if (spec.cases.empty())
    fail(axes.empty() ? "base" : "axes",
         "no valid operating point (" + std::to_string(spec.skipped_invalid) +
             " combinations invalid; the first: " + spec.first_invalid + ")",
         "combinations that pass operating-point validation (see docs/sweep-spec.md)");
  return spec;
}

SweepSpec load_sweep_spec(const std::string& path, std::int64_t max_cases) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot read the file", "an existing, readable JSON sweep spec");
  std::stringstream text;
  text << in.rdbuf();
  json j;
  try {
    j = parse_json_input(text.str(), path);
  } catch (const JsonInputError& e) {
    fail(path, e.problem, "a JSON object as in docs/sweep-spec.md");
  }
  SweepSpec spec = parse_sweep_spec(j, max_cases);
  if (spec.name.empty()) spec.name = std::filesystem::path(path).stem().string();
  return spec;
}

int sweep_cases_to_run(const SweepSpec& spec, const Backend& backend, const RunStore& store) {
  const RunInfo info = make_run_info(backend, spec.settings, "");
  int remaining = 0;
  for (const OperatingPoint& op : spec.cases)
    if (!store.has_case(info.backend, info.device, case_key(op, spec.settings))) ++remaining;
  return remaining;
}

SweepOutcome run_sweep(const SweepSpec& spec, const Backend& backend, RunStore& store, const std::string& command,
                       ProgressObserver* observer, const CancelFlag* cancel) {
  SweepOutcome outcome;
  outcome.total = static_cast<int>(spec.cases.size());
  RunInfo info = make_run_info(backend, spec.settings, command);
  info.notes = "sweep " + spec.name;
  SweepProgress progress(observer, outcome.total);
  auto stop_requested = [&] {
    return (cancel != nullptr && cancel->load()) || (observer != nullptr && observer->cancelled());
  };

  bool run_open = false;
  for (int i = 0; i < outcome.total; ++i) {
    const OperatingPoint& op = spec.cases[static_cast<std::size_t>(i)];
    std::string key = case_key(op, spec.settings);
    std::string label = sweep_case_label(op, i, outcome.total);
    progress.set_case(i, label);
    // Stored already, or (below) being run by another sweep on the same file.
    const auto skip = [&] {
      ++outcome.skipped_existing;
      CaseRecord existing;
      existing.op = op;
      existing.case_key = key;
      if (observer != nullptr) observer->case_done(existing, true);
      progress.progress(1.0, label);
    };
    if (store.has_case(info.backend, info.device, key)) {
      skip();
      continue;
    }
    if (stop_requested()) {
      outcome.cancelled = true;
      break;
    }
    if (store.claim_case(info.backend, info.device, key).outcome != RunStore::ClaimOutcome::claimed) {
      skip();
      continue;
    }
    // The run row is created only when something will be stored, so a resume
    // with nothing left to do leaves the database untouched.
    if (!run_open) {
      outcome.run_id = store.begin_run(info);
      run_open = true;
    }
    progress.progress(0.0, label);
    CaseRecord rec;
    try {
      rec = run_case(backend, op, spec.settings, &progress, cancel);
    } catch (...) {
      store.release_claim(info.backend, info.device, key);  // a live process (the GUI) keeps no dead claim
      throw;
    }
    if (rec.status == CaseStatus::cancelled) {
      // The case in flight is abandoned, never stored half-measured.
      store.release_claim(info.backend, info.device, key);
      outcome.cancelled = true;
      break;
    }
    // Another sweep on the same file may have stored this key while it ran here.
    if (store.add_case_unless_stored(outcome.run_id, rec) == 0) {
      ++outcome.skipped_existing;
      if (observer != nullptr) observer->case_done(rec, true);
      continue;
    }
    ++outcome.ran;
    if (rec.status == CaseStatus::failed || rec.status == CaseStatus::error) ++outcome.failed;
    if (rec.status == CaseStatus::unsupported) ++outcome.unsupported;
    if (observer != nullptr) observer->case_done(rec, false);
    if (stop_requested()) {
      outcome.cancelled = i + 1 < outcome.total;
      break;
    }
  }
  if (run_open) store.finish_run(outcome.run_id);
  return outcome;
}

}  // namespace tilepath
