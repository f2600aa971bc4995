#include "backends/cpu/run_progress.h"

#include <algorithm>

namespace tilepath::cpu {

namespace {
constexpr auto kReportEvery = std::chrono::milliseconds(20);
}

RunProgress::RunProgress(tp_progress_fn progress, void* user, const volatile std::int32_t* cancel, int total_units)
    : progress_(progress), user_(user), cancel_(cancel), total_units_(std::max(1, total_units)) {}

bool RunProgress::check_cancel_flag() {
  if (cancel_ != nullptr && *cancel_ != 0) cancelled_ = true;
  return cancelled_;
}

bool RunProgress::poll(const char* phase, double fraction_of_unit) {
  if (cancelled_ || check_cancel_flag()) return true;
  phase_ = phase;
  const auto now = std::chrono::steady_clock::now();
  if (progress_ != nullptr && (fraction_of_unit == 0.0 || now - last_report_ >= kReportEvery)) {
    last_report_ = now;
    const double fraction = std::clamp((units_done_ + fraction_of_unit) / total_units_, 0.0, 1.0);
    if (progress_(user_, fraction, phase) != 0) cancelled_ = true;
  }
  return cancelled_;
}

bool RunProgress::next_unit(const char* phase) {
  units_done_ = std::min(units_done_ + 1, total_units_);
  return poll(phase, 0.0);
}

}  // namespace tilepath::cpu
