#include "app/cli/cancel_signal.h"

#include <signal.h>
#include <unistd.h>

namespace tilepath::cli {
namespace {

std::atomic<bool> g_cancel{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the flag is written from a signal handler");

extern "C" void on_cancel_signal(int) {
  g_cancel.store(true);
  static const char note[] = "\ntilepath: interrupted; finishing the run (signal again to abort)\n";
  // write(2) is async-signal-safe; stdio is not.
  ssize_t ignored = write(STDERR_FILENO, note, sizeof note - 1);
  (void)ignored;
}

}  // namespace

std::atomic<bool>& cancel_flag() { return g_cancel; }

void install_cancel_handlers() {
  struct sigaction action {};
  action.sa_handler = &on_cancel_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;  // one-shot: the second signal gets the default action
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace tilepath::cli
