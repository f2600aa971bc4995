#pragma once
// The sweep's progress display on stderr: percent, case i/n, ETA, current case.

#include <atomic>
#include <chrono>
#include <string>

#include "core/case_runner.h"

namespace tilepath::cli {

class ProgressBar final : public ProgressObserver {
 public:
  // total: cases in the sweep; cancel: flag reported by cancelled().
  ProgressBar(int total, const CancelFlag* cancel);
  ~ProgressBar() override;

  void progress(double fraction, const std::string& label) override;
  void case_done(const CaseRecord& rec, bool skipped) override;
  bool cancelled() const override { return cancel_ != nullptr && cancel_->load(); }
  // Ends the bar's line (called before printing a summary).
  void finish();

 private:
  std::string eta_text() const;
  void draw(double fraction, const std::string& label, bool force);

  int total_;
  int done_ = 0;
  const CancelFlag* cancel_;
  bool tty_;
  bool line_open_ = false;
  // ETA counts only cases actually run: skipped (already stored) ones are instant.
  int run_done_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  double fraction_ = 0;
  std::string label_;
};

}  // namespace tilepath::cli
