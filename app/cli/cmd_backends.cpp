// `tilepath backends`: loaded plugins, their devices, and why a plugin has none.

#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/cli/command.h"
#include "core/plugin_host.h"

namespace tilepath::cli {
namespace {

struct BackendsFlags {
  bool json = false;
};

nlohmann::json backends_json(const PluginHost& host) {
  nlohmann::json out;
  out["backends"] = nlohmann::json::array();
  for (const auto& b : host.backends()) {
    nlohmann::json devices = nlohmann::json::array();
    for (const DeviceInfo& d : b->devices())
      devices.push_back({{"index", d.index},
                         {"name", d.name},
                         {"uid", d.uid},
                         {"arch", d.arch},
                         {"sm_count", d.sm_count},
                         {"memory_bytes", d.memory_bytes},
                         {"bandwidth_gbps", d.bandwidth_gbps},
                         {"l2_bytes", d.l2_bytes},
                         {"clock_mhz", d.clock_mhz}});
    nlohmann::json kernels = nlohmann::json::array();
    for (const KernelRecordInfo& k : b->kernels())
      kernels.push_back({{"name", k.name},
                         {"symbol", k.symbol},
                         {"binary_sha256", k.binary_sha256},
                         {"registers", k.registers},
                         {"accum_registers", k.accum_registers},
                         {"shared_bytes", k.shared_bytes},
                         {"scratch_bytes", k.scratch_bytes},
                         {"threads", k.threads},
                         {"waves_per_simd", k.waves_per_simd},
                         {"target_waves_per_simd", k.target_waves_per_simd}});
    out["backends"].push_back({{"name", b->name()},
                               {"version", b->version()},
                               {"abi", std::to_string(b->abi_major()) + "." + std::to_string(b->abi_minor())},
                               {"file", b->file()},
                               {"devices", devices},
                               {"kernels", kernels},
                               {"no_device_reason", b->no_device_reason()}});
  }
  out["problems"] = nlohmann::json::array();
  for (const PluginProblem& p : host.problems()) out["problems"].push_back({{"file", p.file}, {"reason", p.reason}});
  out["search_dirs"] = PluginHost::search_dirs();
  return out;
}

void print_backends(const PluginHost& host) {
  if (host.backends().empty()) std::printf("no backend plugins found (searched: see --json search_dirs)\n");
  for (const auto& b : host.backends()) {
    std::printf("%s %s (ABI %u.%u) %s\n", b->name().c_str(), b->version().c_str(), b->abi_major(), b->abi_minor(),
                b->file().c_str());
    if (b->devices().empty()) std::printf("  no devices: %s\n", b->no_device_reason().c_str());
    if (!b->kernels().empty())
      std::printf("  %zu compiled kernels (tilepath backends --json lists them)\n", b->kernels().size());
    for (const DeviceInfo& d : b->devices())
      std::printf("  device %d: %s (%s), %d SMs, %.1f GiB, %.0f GB/s%s\n", d.index, d.name.c_str(), d.arch.c_str(),
                  d.sm_count, d.memory_bytes / (1024.0 * 1024.0 * 1024.0), d.bandwidth_gbps,
                  d.uid.empty() ? "" : (", " + d.uid).c_str());
  }
  for (const PluginProblem& p : host.problems()) std::printf("not loaded: %s: %s\n", p.file.c_str(), p.reason.c_str());
}

}  // namespace

Command add_backends_command(CLI::App& app) {
  auto flags = std::make_shared<BackendsFlags>();
  CLI::App* sub = app.add_subcommand("backends", "List backend plugins, versions and devices");
  sub->add_flag("--json", flags->json, "print JSON");
  return {sub, [flags](const CliContext&) {
            PluginHost host;
            host.discover();
            if (flags->json)
              std::printf("%s\n", backends_json(host).dump(2).c_str());
            else
              print_backends(host);
            return kExitOk;
          }};
}

}  // namespace tilepath::cli
