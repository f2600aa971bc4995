#pragma once
// "key=value" text → CaseFilter, for Export subset… (e.g. "backend=sim kv=k8v8 cache=hbm_cold").

#include <QString>

#include "core/store/run_store.h"

namespace tilepath::ui {

// Keys: the CLI's filter flags, run_id, backend, device, kv, k_path, mode, cache, batch,
// context, head_dim, status ("k-path" and "k_path" both; "run" and "path" too).
// Throws ValidationError naming the bad key or value and the allowed ones.
CaseFilter parseCaseFilter(const QString& text);

}  // namespace tilepath::ui
