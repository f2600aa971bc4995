#pragma once
// Progress and cancellation of one run_case: the host's cancel flag and progress
// callback, both touched only from the thread that called run_case.

#include <chrono>
#include <cstdint>
#include <string>

#include "backends/abi/tilepath_backend.h"

namespace tilepath::cpu {

class RunProgress {
 public:
  // total_units: how many equal-weight steps (kernel runs, phases) the run will take.
  RunProgress(tp_progress_fn progress, void* user, const volatile std::int32_t* cancel, int total_units);

  // Report `fraction` of the current unit in `phase`; true when the run must stop.
  // Callbacks are throttled (every ~20 ms) except at unit boundaries.
  bool poll(const char* phase, double fraction_of_unit);
  // Move to the next unit (reports it); true when the run must stop.
  bool next_unit(const char* phase);
  bool cancelled() const { return cancelled_; }
  const std::string& phase() const { return phase_; }

 private:
  bool check_cancel_flag();
  tp_progress_fn progress_;
  void* user_;
  const volatile std::int32_t* cancel_;
  int total_units_;
  int units_done_ = 0;
  bool cancelled_ = false;
  std::string phase_;
  std::chrono::steady_clock::time_point last_report_{};
};

}  // namespace tilepath::cpu
