#include "app/cli/cancel_signal.h"

#include <signal.h>
#include <unistd.h>

#include <csignal>

namespace tilepath::cli {
namespace {

CancelFlag g_cancel{0};  // lock-free (asserted in case_runner.h): safe to write from a signal handler

extern "C" void on_cancel_signal(int) {
  g_cancel.store(1);
  static const char note[] = "\ntilepath: interrupted; finishing the run (signal again to abort)\n";
  // write(2) is async-signal-safe; stdio is not.
  ssize_t ignored = write(STDERR_FILENO, note, sizeof note - 1);
  (void)ignored;
}

}  // namespace

CancelFlag& cancel_flag() { return g_cancel; }

void install_cancel_handlers() {
  struct sigaction action {};
  action.sa_handler = &on_cancel_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;  // one-shot: the second signal gets the default action
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool restore_default_signals() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  return g_cancel.load() != 0;
}

}  // namespace tilepath::cli
