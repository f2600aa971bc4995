#pragma once
// Picking a backend plugin and device for run / sweep, with one-line errors.

#include <string>

#include "core/plugin_host.h"

namespace tilepath::cli {

// The backend named `name` with a usable device `device`. Throws UsageError when
// the name is unknown (listing the loaded backends and plugin problems) or the
// device index is out of range; std::runtime_error when the backend has no device
// (with its reason).
const Backend& choose_backend(const PluginHost& host, const std::string& name, int device);

}  // namespace tilepath::cli
