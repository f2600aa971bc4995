#pragma once
// SIGINT / SIGTERM -> a cancel flag that long commands poll between and inside cases.

#include "core/case_runner.h"

namespace tilepath::cli {

// The process-wide flag the handlers set.
CancelFlag& cancel_flag();

// Installs the handlers. The first signal sets the flag (the run finishes
// cleanly); the handler then resets itself, so a second signal ends the process.
// main() installs them before anything else, so that no moment of a run is unguarded.
void install_cancel_handlers();
// For the commands that never look at the flag: the default actions again. Returns
// whether a signal arrived while the handlers were in place.
bool restore_default_signals();

}  // namespace tilepath::cli
