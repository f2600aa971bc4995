#include "app/cli/ncu_profile.h"

#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "core/find_on_path.h"
#include "core/op_fields.h"
#include "core/perf/ncu_csv.h"

namespace tilepath::cli {
namespace fs = std::filesystem;

std::string find_ncu() { return find_on_path("ncu"); }

std::vector<std::string> ncu_command(const std::string& ncu, const std::string& tilepath, const OperatingPoint& op,
                                     const ProfileRequest& r, const std::string& scratch_db) {
  std::vector<std::string> argv = {ncu,
                                   "--clock-control",
                                   "none",
                                   "--csv",
                                   "--page",
                                   "raw",
                                   "--print-units",
                                   "base",
                                   "--metrics",
                                   perf::ncu_csv_metric_list(),
                                   "--kernel-name",
                                   perf::ncu_main_kernel_filter(),
                                   "--launch-count",
                                   "1",
                                   tilepath,
                                   "run",
                                   "--backend",
                                   r.backend,
                                   "--device",
                                   std::to_string(r.device),
                                   "--db",
                                   scratch_db,
                                   "--repeats",
                                   "1",
                                   "--warmup",
                                   "0",
                                   "--no-ablations",
                                   "--keys",
                                   r.keys,
                                   "--seed",
                                   std::to_string(r.seed)};
  // Every field of the operating point as its flag, so the child runs exactly this case.
  for (const OpField& field : op_fields()) {
    const std::string text = field.get_text(op);
    if (field.kind == FieldKind::integer_list && text.empty()) continue;
    argv.push_back(std::string(field.flag));
    argv.push_back(text);
  }
  return argv;
}

namespace {

// argv with stdout and stderr into `log`; the exit status (-1: could not start).
int run_to_file(const std::vector<std::string>& argv, const std::string& log) {
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw std::runtime_error(log + ": cannot write: " + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fd);
  if (pid < 0) return -1;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

ProfileOutcome profile_case(RunStore& store, const CaseRecord& rec, const ProfileRequest& r) {
  ProfileOutcome out;
  if (r.backend != "cuda") {
    out.why = "the " + r.backend + " backend has no kernel for Nsight Compute; --profile profiles cuda cases";
    return out;
  }
  if (rec.status != CaseStatus::ok) {
    out.why = "the case did not pass (" + std::string(to_string(rec.status)) + "); nothing to profile";
    return out;
  }
  const std::string ncu = find_ncu();
  if (ncu.empty()) {
    out.why = "ncu is not on PATH";
    return out;
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("--profile: cannot find this tilepath executable: " + ec.message());
  const fs::path scratch = fs::temp_directory_path() / ("tilepath-profile-" + std::to_string(::getpid()));
  fs::create_directories(scratch);
  const std::string csv_path = (scratch / "ncu.csv").string();
  const std::vector<std::string> argv = ncu_command(ncu, self.string(), rec.op, r, (scratch / "p.sqlite").string());
  const int status = run_to_file(argv, csv_path);
  const std::string text = read_text(csv_path);
  if (status != 0)
    throw std::runtime_error("--profile: ncu exited with " + std::to_string(status) + "; its output is in " + csv_path);
  perf::NcuCsvReport report;
  try {
    report = perf::parse_ncu_csv(text, csv_path);
  } catch (const perf::NcuReportError& e) {
    throw std::runtime_error(std::string("--profile: ") + e.what());
  }
  const perf::NcuCsvLaunch* main = report.first_main_kernel_launch();
  if (!main)
    throw std::runtime_error("--profile: " + csv_path + " has no launch of a main decode kernel (" +
                             perf::ncu_main_kernel_filter() + ")");
  CaseAnnotation annotation;
  for (const perf::NcuCsvMeasurement& m : perf::ncu_csv_measurements(*main, csv_path)) {
    annotation.measurements.push_back({m.name, m.value, m.unit});
    if (m.name == "ncu_achieved_occupancy_pct") annotation.occupancy_achieved = m.value / 100.0;
  }
  out.artifact = "ncu-profile.csv";
  annotation.artifacts.push_back({out.artifact, "text/csv", std::vector<std::uint8_t>(text.begin(), text.end())});
  store.annotate_case(rec.id, annotation);
  fs::remove_all(scratch, ec);
  out.ran = true;
  out.measurements = static_cast<int>(annotation.measurements.size());
  return out;
}

}  // namespace tilepath::cli
