#pragma once
// How a command plugs into the `tilepath` CLI: it registers its flags on a CLI11
// subcommand and returns the action main runs when that subcommand was chosen.

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace tilepath::cli {

// What every command may need besides its own flags.
struct CliContext {
  std::string command_line;  // argv joined, stored with runs
};

using CommandAction = std::function<int(const CliContext&)>;

// A registered subcommand and what to run when the user chose it. The action
// owns the storage its flags were bound to.
struct Command {
  CLI::App* sub = nullptr;
  CommandAction action;
};

// Exit codes shared by all commands (docs/cli.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // runtime problem, unusable file, failed case
inline constexpr int kExitUsage = 2;    // bad flag, malformed spec, invalid operating point
inline constexpr int kExitCancelled = 130;

// A problem with what the user asked for (exit code 2). One line, no trailing newline.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

Command add_backends_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_sweep_command(CLI::App& app);
Command add_predict_command(CLI::App& app);
Command add_graph_command(CLI::App& app);
Command add_export_command(CLI::App& app);
Command add_merge_command(CLI::App& app);
Command add_report_command(CLI::App& app);
Command add_attach_command(CLI::App& app);
Command add_analyze_command(CLI::App& app);
Command add_db_command(CLI::App& app);
Command add_dispatch_command(CLI::App& app);
Command add_gate_command(CLI::App& app);
Command add_worker_command(CLI::App& app);
Command add_model_command(CLI::App& app);

}  // namespace tilepath::cli
