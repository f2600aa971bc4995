// `tilepath attach --db DB --file F [--ncu | --ncu-csv] <op flags | --case ID>`: keeps a file
// (e.g. a raw Nsight Compute report) as an artifact of a stored case; with --ncu also the
// numbers read from ncu's text output (achieved occupancy, DRAM throughput, duration, SM
// clock, per-reason stalls), with --ncu-csv those of its CSV output (core/perf/ncu_csv.h:
// DRAM bytes read and written, L2 hit rate, achieved occupancy, duration, stalls,
// shared-memory bank conflicts, instructions per pipe) of the main kernel's launch.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/cli/cli_output.h"
#include "app/cli/command.h"
#include "app/cli/op_flags.h"
#include "app/cli/output_file.h"
#include "core/perf/ncu_csv.h"
#include "core/perf/ncu_report.h"
#include "core/store/run_store.h"

namespace tilepath::cli {
namespace {

struct AttachFlags {
  OpFlags op;
  std::string db, file, name, mime = "text/plain", backend = "cuda", device;
  long long case_id = 0;
  bool ncu = false, ncu_csv = false, json = false;
  CLI::App* sub = nullptr;
};

bool given(const CLI::App* sub, const char* name) { return sub->get_option(name)->count() > 0; }

// The case the file goes to.
struct Target {
  std::int64_t case_id = 0;
  std::string run_uuid, backend, device;
  std::string cubin_sha256;  // of the kernel that measured the case; "" where the backend records none
  OperatingPoint op;
  CaseStatus status = CaseStatus::ok;
};

std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw UsageError("--file " + path + ": no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("--file " + path + ": cannot be read");
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// How alike two operating points are (for listing the nearest stored cases first).
int likeness(const OperatingPoint& a, const OperatingPoint& b) {
  return (a.kv == b.kv) * 8 + (a.k_path == b.k_path) * 4 + (a.mode == b.mode) * 4 + (a.context == b.context) * 4 +
         (a.cache == b.cache) * 2 + (a.head_dim == b.head_dim) + (a.q_heads == b.q_heads) + (a.kv_heads == b.kv_heads) +
         (a.page_size == b.page_size) + (a.k_repr == b.k_repr) + (a.splits == b.splits) + (a.mma == b.mma) +
         (a.context_lengths == b.context_lengths);
}

// "no ok case for ... in DB; stored cases of backend cuda at B=64: ..." naming what exists.
std::string not_found_message(const RunStore& store, const AttachFlags& f, const OperatingPoint& op) {
  std::string where = "backend " + f.backend + (f.device.empty() ? "" : " on device '" + f.device + "'");
  std::string msg = "no ok case for " + describe_case(op) + " of " + where + " in " + f.db;
  CaseFilter backend_filter;
  backend_filter.backend = f.backend;
  if (!f.device.empty()) backend_filter.device = f.device;
  std::vector<CaseSummary> of_backend = store.cases(backend_filter);
  if (of_backend.empty()) {
    std::set<std::string> backends;
    for (const RunInfo& r : store.runs()) backends.insert(r.backend + " (" + r.device + ")");
    std::string list;
    for (const std::string& b : backends) list += (list.empty() ? "" : ", ") + b;
    return msg + "; it holds no case of " + where +
           (list.empty() ? " (the database is empty)" : "; runs stored: " + list);
  }
  std::vector<const CaseSummary*> same_batch;
  std::set<int> batches;
  for (const CaseSummary& c : of_backend) {
    batches.insert(c.record.op.batch);
    if (c.record.op.batch == op.batch) same_batch.push_back(&c);
  }
  if (same_batch.empty()) {
    std::string list;
    for (int b : batches) list += (list.empty() ? "" : ", ") + std::to_string(b);
    return msg + "; " + where + " has no case at B=" + std::to_string(op.batch) + " (stored batches: " + list + ")";
  }
  std::stable_sort(same_batch.begin(), same_batch.end(), [&](const CaseSummary* a, const CaseSummary* b) {
    return likeness(a->record.op, op) > likeness(b->record.op, op);
  });
  constexpr std::size_t kShown = 8;
  msg += "; stored cases of " + where + " at B=" + std::to_string(op.batch) + " (nearest first): ";
  for (std::size_t i = 0; i < same_batch.size() && i < kShown; ++i)
    msg += (i ? "; " : "") + describe_case(same_batch[i]->record.op) + " [" +
           std::string(to_string(same_batch[i]->record.status)) + ", case " + std::to_string(same_batch[i]->case_id) +
           "]";
  if (same_batch.size() > kShown) msg += "; and " + std::to_string(same_batch.size() - kShown) + " more";
  return msg;
}

Target find_target(const RunStore& store, const AttachFlags& f, const std::optional<OperatingPoint>& op) {
  Target t;
  if (!op) {
    CaseRecord rec;
    try {
      rec = store.load_case(f.case_id);
    } catch (const StoreError&) {
      throw std::runtime_error("--case " + std::to_string(f.case_id) + ": no such case in " + f.db + " (it holds " +
                               std::to_string(store.case_count()) + " cases)");
    }
    std::optional<RunInfo> run = store.run(rec.run_id);
    t.case_id = rec.id;
    t.op = rec.op;
    t.status = rec.status;
    t.cubin_sha256 = rec.kernel.cubin_sha256;
    if (run) {
      t.run_uuid = run->uuid;
      t.backend = run->backend;
      t.device = run->device;
    }
    return t;
  }
  CaseFilter filter;
  filter.backend = f.backend;
  if (!f.device.empty()) filter.device = f.device;
  filter.kv = std::string(to_string(op->kv));
  filter.k_path = std::string(to_string(op->k_path));
  filter.mode = std::string(to_string(op->mode));
  filter.cache = std::string(to_string(op->cache));
  filter.batch = op->batch;
  filter.context = op->context;
  filter.head_dim = op->head_dim;
  filter.status = CaseStatus::ok;
  const CaseSummary* newest = nullptr;
  std::vector<CaseSummary> found = store.cases(filter);
  for (const CaseSummary& c : found) {
    if (!(c.record.op == *op)) continue;
    // Newest: the latest finish time; the later-stored case among equals.
    if (newest == nullptr ||
        std::make_pair(c.record.finished_at, c.case_id) > std::make_pair(newest->record.finished_at, newest->case_id))
      newest = &c;
  }
  if (newest == nullptr) throw std::runtime_error(not_found_message(store, f, *op));
  t.case_id = newest->case_id;
  t.run_uuid = newest->run_uuid;
  t.backend = newest->backend;
  t.device = newest->device;
  t.op = newest->record.op;
  t.status = newest->record.status;
  t.cubin_sha256 = newest->record.kernel.cubin_sha256;
  return t;
}

// The measurements and occupancy --ncu stores, read from the report (throws UsageError naming the row).
CaseAnnotation ncu_annotation(const perf::NcuReport& r, const std::string& file) {
  CaseAnnotation a;
  try {
    const double occupancy_pct = r.achieved_occupancy_pct();
    a.occupancy_achieved = occupancy_pct / 100.0;  // cases.occupancy_achieved is a fraction, like the theoretical one
    a.measurements = {{"ncu_dram_throughput_pct", r.dram_throughput_pct(), "%"},
                      {"ncu_duration_us", r.duration_us(), "us"},
                      {"ncu_sm_frequency_ghz", r.sm_frequency_ghz(), "GHz"},
                      {"ncu_achieved_occupancy_pct", occupancy_pct, "%"}};
  } catch (const perf::NcuReportError& e) {
    throw UsageError("--file " + file + ": " + e.what());
  }
  for (const perf::NcuStall& s : r.stalls)
    a.measurements.push_back({"ncu_stall_" + s.reason + "_cycles", s.cycles_per_issue, "cycle"});
  return a;
}

// "long_scoreboard 1.80, barrier 0.90, wait 0.50"
std::string top_stalls(const perf::NcuReport& r, std::size_t n) {
  std::string out;
  for (const perf::NcuStall& s : r.top_stalls(n))
    out += (out.empty() ? "" : ", ") + s.reason + " " + human_number(s.cycles_per_issue, "%.2f");
  return out;
}

int attach(const AttachFlags& f) {
  // Everything the user gave is checked before the database is opened for writing.
  const CLI::App* sub = f.sub;
  std::optional<OperatingPoint> op;
  if (given(sub, "--case")) {
    std::string clash;
    for (const std::string& name : given_op_flags(f.op)) clash += (clash.empty() ? "" : " ") + name;
    for (const char* name : {"--backend", "--device"})
      if (given(sub, name)) clash += std::string(clash.empty() ? "" : " ") + name;
    if (!clash.empty())
      throw UsageError(
          "--case picks the case by id; leave out the flags that pick it by operating point (given: " + clash + ")");
    if (f.case_id < 1) throw UsageError("--case must be a case id >= 1");
  } else {
    op = build_operating_point(f.op);
  }
  const std::string name = given(sub, "--name") ? f.name : std::filesystem::path(f.file).filename().string();
  if (name.empty()) throw UsageError("--name must not be empty");
  if (f.mime.empty()) throw UsageError("--mime must not be empty");

  if (f.ncu && f.ncu_csv) throw UsageError("--ncu and --ncu-csv: give one (the file is ncu's text or its CSV output)");
  Artifact artifact{name, f.mime, read_bytes(f.file)};
  std::optional<perf::NcuReport> report;
  CaseAnnotation annotation;
  if (f.ncu) {
    try {
      report = perf::parse_ncu_report(
          std::string_view(reinterpret_cast<const char*>(artifact.data.data()), artifact.data.size()), f.file);
    } catch (const perf::NcuReportError& e) {
      throw UsageError("--file " + std::string(e.what()));  // what() starts with the file name
    }
    annotation = ncu_annotation(*report, f.file);
  }
  std::vector<perf::NcuCsvMeasurement> csv_measurements;
  std::string csv_case, csv_cubin;  // the `tilepath run` summary's case and cubin lines in the CSV, if any
  if (f.ncu_csv) {
    try {
      const perf::NcuCsvReport csv = perf::parse_ncu_csv(
          std::string_view(reinterpret_cast<const char*>(artifact.data.data()), artifact.data.size()), f.file);
      const perf::NcuCsvLaunch* main = csv.first_main_kernel_launch();
      if (!main)
        throw UsageError("--file " + f.file + ": no launch of a main decode kernel among its " +
                         std::to_string(csv.launches.size()) + " (profile with --kernel-name " +
                         perf::ncu_main_kernel_filter() + ")");
      csv_measurements = perf::ncu_csv_measurements(*main, f.file);
      csv_case = csv.tilepath_case;
      csv_cubin = csv.tilepath_cubin;
    } catch (const perf::NcuReportError& e) {
      throw UsageError("--file " + std::string(e.what()));
    }
    for (const perf::NcuCsvMeasurement& m : csv_measurements) {
      annotation.measurements.push_back({m.name, m.value, m.unit});
      if (m.name == "ncu_achieved_occupancy_pct") annotation.occupancy_achieved = m.value / 100.0;
    }
  }
  annotation.artifacts.push_back(artifact);

  require_existing(f.db, "--db");
  Target target;
  {
    // Looked up read-only, so a case that is not there leaves the file as it was. A file
    // the read-only open refuses (an older schema, say) gets the read-write open below,
    // which migrates a tilepath database and refuses anything else without writing.
    std::optional<RunStore> reader;
    try {
      reader.emplace(RunStore::open_read_only(f.db));
    } catch (const StoreError&) {
      reader.emplace(RunStore::open(f.db));
    }
    target = find_target(*reader, f, op);
  }
  // A report that names its case (the `tilepath run` summary ncu's output carries) must name this one.
  const std::string reported_case = report ? report->tilepath_case : csv_case;
  if (!reported_case.empty() && reported_case != describe_case(target.op))
    throw UsageError("--file " + f.file + " is the ncu report of case '" + reported_case + "', not of case " +
                     std::to_string(target.case_id) + " '" + describe_case(target.op) + "'");
  // A report that names its kernel's cubin must name the case's: a profile of another build is
  // not a measurement of this case's kernel.
  const std::string reported_cubin = report ? report->tilepath_cubin : csv_cubin;
  const bool cubin_checked = !reported_cubin.empty() && !target.cubin_sha256.empty();
  if (cubin_checked && reported_cubin != target.cubin_sha256)
    throw UsageError("--file " + f.file + " profiled the cubin " + reported_cubin.substr(0, 12) + "..., not case " +
                     std::to_string(target.case_id) + "'s " + target.cubin_sha256.substr(0, 12) +
                     "...: another build of the kernel than the one that measured the case");

  RunStore store = RunStore::open(f.db);
  AnnotationResult result = store.annotate_case(target.case_id, annotation);
  ArtifactInfo stored;
  for (const ArtifactInfo& a : store.artifact_infos(target.case_id))
    if (a.name == name) stored = a;

  if (f.json) {
    nlohmann::json j;
    j["db"] = f.db;
    j["case_id"] = target.case_id;
    j["run_uuid"] = target.run_uuid;
    j["backend"] = target.backend;
    j["device"] = target.device;
    j["case"] = describe_case(target.op);
    if (f.ncu || f.ncu_csv)
      j["cubin"] = {
          {"case", target.cubin_sha256.empty() ? nlohmann::json(nullptr) : nlohmann::json(target.cubin_sha256)},
          {"report", reported_cubin.empty() ? nlohmann::json(nullptr) : nlohmann::json(reported_cubin)},
          {"checked", cubin_checked}};
    j["status"] = std::string(to_string(target.status));
    j["artifact"] = {{"name", stored.name}, {"mime", stored.mime}, {"size", stored.size}, {"sha256", stored.sha256}};
    nlohmann::json replaced = nlohmann::json::array();
    for (const ArtifactInfo& a : result.replaced_artifacts)
      replaced.push_back({{"name", a.name}, {"mime", a.mime}, {"size", a.size}, {"sha256", a.sha256}});
    j["replaced_artifacts"] = replaced;
    nlohmann::json measurements = nlohmann::json::object();
    for (const Measurement& m : annotation.measurements)
      measurements[m.name] = std::isfinite(m.value) ? nlohmann::json(m.value) : nlohmann::json(nullptr);
    j["measurements"] = measurements;
    j["occupancy_achieved"] = annotation.occupancy_achieved && std::isfinite(*annotation.occupancy_achieved)
                                  ? nlohmann::json(*annotation.occupancy_achieved)
                                  : nlohmann::json(nullptr);
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  std::printf("attached  %s (%lld bytes, %s) to case %lld of run %s (%s on %s) in %s\n", stored.name.c_str(),
              static_cast<long long>(stored.size), stored.mime.c_str(), static_cast<long long>(target.case_id),
              target.run_uuid.c_str(), target.backend.c_str(), target.device.c_str(), f.db.c_str());
  std::printf("case      %s (%s)\n", describe_case(target.op).c_str(), std::string(to_string(target.status)).c_str());
  if (cubin_checked)
    std::printf("cubin     the case's, as the report names it (sha256 %s)\n",
                target.cubin_sha256.substr(0, 16).c_str());
  else if ((f.ncu || f.ncu_csv) && !target.cubin_sha256.empty())
    std::printf("cubin     not checked: the report names no cubin (a `tilepath run` summary line it lacks)\n");
  for (const ArtifactInfo& a : result.replaced_artifacts)
    std::printf("replaced  the artifact '%s' stored before (%lld bytes, sha256 %s)\n", a.name.c_str(),
                static_cast<long long>(a.size), a.sha256.substr(0, 16).c_str());
  if (f.ncu_csv)
    std::printf("ncu csv   %zu measurements of the main kernel's launch stored as ncu_*%s\n", csv_measurements.size(),
                annotation.occupancy_achieved ? " (and occupancy_achieved)" : "");
  if (report) {
    std::printf(
        "ncu       DRAM throughput %s%%, duration %s us, SM %s GHz, achieved occupancy %s%% (stored as %s)\n",
        human_number(report->dram_throughput_pct()).c_str(), human_number(report->duration_us(), "%.2f").c_str(),
        human_number(report->sm_frequency_ghz(), "%.3g").c_str(),
        human_number(report->achieved_occupancy_pct()).c_str(), human_number(*annotation.occupancy_achieved).c_str());
    if (report->stalls.empty())
      std::printf(
          "stalls    none in the report (profile with --metrics "
          "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio)\n");
    else
      std::printf(
          "stalls    %zu reasons stored as ncu_stall_<reason>_cycles; top: %s (cycles per issued instruction)\n",
          report->stalls.size(), top_stalls(*report, 3).c_str());
    if (!result.replaced_measurements.empty())
      std::printf("replaced  %zu measurements stored before under the same names\n",
                  result.replaced_measurements.size());
  }
  return kExitOk;
}

}  // namespace

Command add_attach_command(CLI::App& app) {
  auto f = std::make_shared<AttachFlags>();
  CLI::App* sub = app.add_subcommand(
      "attach", "Keep a file (e.g. a raw ncu report) as an artifact of a stored case; --ncu also stores its numbers");
  f->sub = sub;
  sub->add_option("--db", f->db, "run database holding the case (must exist)")->required();
  sub->add_option("--file", f->file, "the file to keep")->required();
  sub->add_option("--name", f->name, "artifact name (default: the file's name); an artifact of that name is replaced");
  sub->add_option("--mime", f->mime, "media type")->default_str("text/plain");
  sub->add_flag("--ncu", f->ncu,
                "the file is Nsight Compute text output: also store occupancy_achieved and ncu_* measurements");
  sub->add_flag("--ncu-csv", f->ncu_csv,
                "the file is Nsight Compute CSV output (--csv --page raw --print-units base): also store the main "
                "kernel's ncu_* measurements and occupancy_achieved");
  sub->add_option("--case", f->case_id, "the case id (instead of the operating-point flags)");
  sub->add_option("--backend", f->backend, "backend of the case (with the operating-point flags)")->default_str("cuda");
  sub->add_option("--device", f->device, "device name of the case's run (default: any)");
  add_op_flags(sub, f->op, /*shape_required=*/false);
  sub->add_flag("--json", f->json, "print what was stored as JSON");
  return {sub, [f](const CliContext&) { return attach(*f); }};
}

}  // namespace tilepath::cli
