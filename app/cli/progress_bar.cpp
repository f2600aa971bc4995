#include "app/cli/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tilepath::cli {
namespace {

constexpr int kBarWidth = 24;

std::string clock_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  auto s = static_cast<long long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%02lld:%02lld", s / 60, s % 60);
  return buf;
}

}  // namespace

ProgressBar::ProgressBar(int total, const CancelFlag* cancel)
    : total_(total), cancel_(cancel), tty_(isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() { finish(); }

std::string ProgressBar::eta_text() const {
  if (run_done_ == 0) return "--:--";
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return clock_text(elapsed / run_done_ * (total_ - done_));
}

void ProgressBar::progress(double fraction, const std::string& label) {
  fraction_ = std::clamp(fraction, 0.0, 1.0);
  label_ = label;
  draw(fraction_, label_, false);
}

void ProgressBar::case_done(const CaseRecord& rec, bool skipped) {
  ++done_;
  if (skipped) {
    // Resumed sweeps: the clock starts with the first case that really runs.
    if (run_done_ == 0) start_ = std::chrono::steady_clock::now();
    return;
  }
  ++run_done_;
  if (!tty_) {
    double fraction = total_ > 0 ? static_cast<double>(done_) / total_ : 1.0;
    std::fprintf(stderr, "[%3.0f%%] case %d/%d %s (%s) ETA %s\n", fraction * 100, done_, total_, label_.c_str(),
                 std::string(to_string(rec.status)).c_str(), eta_text().c_str());
    std::fflush(stderr);
  }
}

void ProgressBar::draw(double fraction, const std::string& label, bool force) {
  if (!tty_) return;
  auto now = std::chrono::steady_clock::now();
  if (!force && line_open_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  int filled = static_cast<int>(fraction * kBarWidth + 0.5);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(kBarWidth, '.');
  std::string text = label;
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  // "case i/n" counts the case in flight, so the first one shows 1/n.
  int current = std::min(done_ + 1, total_);
  std::fprintf(stderr, "\r\033[K[%s] %3.0f%% case %d/%d ETA %s  %s", bar.c_str(), fraction * 100, current, total_,
               eta_text().c_str(), text.c_str());
  std::fflush(stderr);
  line_open_ = true;
}

void ProgressBar::finish() {
  if (tty_ && line_open_) {
    draw(fraction_, label_, true);
    std::fputc('\n', stderr);
    std::fflush(stderr);
  }
  line_open_ = false;
}

}  // namespace tilepath::cli
