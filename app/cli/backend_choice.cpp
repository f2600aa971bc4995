#include "app/cli/backend_choice.h"

#include <stdexcept>

#include "app/cli/command.h"

namespace tilepath::cli {

const Backend& choose_backend(const PluginHost& host, const std::string& name, int device) {
  const Backend* backend = host.find(name);
  if (backend == nullptr) {
    std::string loaded;
    for (const auto& b : host.backends()) loaded += (loaded.empty() ? "" : ", ") + b->name();
    std::string message = "unknown backend '" + name + "'; allowed: " + (loaded.empty() ? "(none loaded)" : loaded);
    for (const auto& p : host.problems()) message += "; could not load " + p.file + ": " + p.reason;
    throw UsageError(message);
  }
  const auto count = static_cast<int>(backend->devices().size());
  if (count == 0) throw std::runtime_error("backend '" + name + "' has no devices: " + backend->no_device_reason());
  if (device < 0 || device >= count)
    throw UsageError("--device " + std::to_string(device) + " out of range; backend '" + name + "' has devices 0.." +
                     std::to_string(count - 1));
  return *backend;
}

}  // namespace tilepath::cli
