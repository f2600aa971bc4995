#pragma once
// SIGINT / SIGTERM -> a cancel flag that long commands poll between and inside cases.

#include "core/case_runner.h"

namespace tilepath::cli {

// The process-wide flag the handlers set.
CancelFlag& cancel_flag();

// Installs the handlers. The first signal sets the flag (the run finishes
// cleanly); the handler then resets itself, so a second signal ends the process.
void install_cancel_handlers();

}  // namespace tilepath::cli
