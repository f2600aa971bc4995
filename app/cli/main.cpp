// `tilepath`: the headless front end over core (see docs/cli.md).

#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "app/cli/cancel_signal.h"
#include "app/cli/cli_output.h"
#include "app/cli/command.h"
#include "core/operating_point.h"
#include "core/store/run_store.h"

namespace {

// CLI11's "Could not convert: --repeats = abc" as "--repeats: 'abc' is not a decimal
// integer; allowed: ...": the flag, the value and what the flag takes.
std::string conversion_message(const CLI::App& sub, const std::string& what) {
  const std::string lead = "Could not convert: ";
  const std::size_t at = what.find(lead), eq = what.find(" = ");
  if (at == std::string::npos || eq == std::string::npos || eq < at) return what;
  const std::string flag = what.substr(at + lead.size(), eq - at - lead.size());
  const std::string value = what.substr(eq + 3);
  const CLI::Option* option = sub.get_option_no_throw(flag);
  const std::string type = option != nullptr ? option->get_type_name() : "";
  std::string kind = type.empty() ? "a value this flag takes" : "a value of type " + type;
  if (type == "INT") kind = "a decimal integer";
  if (type == "UINT") kind = "a non-negative decimal integer";
  if (type == "FLOAT") kind = "a number";
  std::string allowed = kind;
  if (option != nullptr && !option->get_default_str().empty())
    allowed += " (default " + option->get_default_str() + ")";
  return flag + ": '" + value + "' is not " + kind + "; allowed: " + allowed;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tilepath;
  using namespace tilepath::cli;
  // A reader that goes away (`tilepath sweep ... | head -1`) must not kill a sweep between
  // two cases: writes to the closed pipe then just fail, and the run finishes and commits.
  std::signal(SIGPIPE, SIG_IGN);
  // Before anything else: a signal in the first milliseconds (loading plugins, opening the
  // database) must stop a run cleanly too, not kill it.
  install_cancel_handlers();

  CLI::App app{"tilepath: FP8 KV-cache decode attention explorer (stage model, backends, run store)", "tilepath"};
  app.set_version_flag("--version", TILEPATH_VERSION);
  app.require_subcommand(1);
  std::vector<Command> commands = {add_backends_command(app), add_run_command(app),     add_sweep_command(app),
                                   add_predict_command(app),  add_analyze_command(app), add_graph_command(app),
                                   add_export_command(app),   add_merge_command(app),   add_report_command(app),
                                   add_attach_command(app),   add_db_command(app),      add_dispatch_command(app),
                                   add_gate_command(app),     add_model_command(app),   add_worker_command(app)};

  CliContext context;
  for (int i = 0; i < argc; ++i) context.command_line += (i ? " " : "") + std::string(argv[i]);

  std::string prefix = "tilepath";
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    for (const Command& c : commands) {
      if (!c.sub->parsed()) continue;
      prefix = "tilepath " + c.sub->get_name();
      // CLI11 checks required flags before unknown ones; a typo is the more useful report.
      std::vector<std::string> unknown = c.sub->remaining();
      if (!unknown.empty()) {
        message = "unknown argument" + std::string(unknown.size() > 1 ? "s" : "") + ":";
        for (const std::string& a : unknown) message += " " + a;
      } else if (dynamic_cast<const CLI::ConversionError*>(&e) != nullptr) {
        message = conversion_message(*c.sub, message);
      }
    }
    print_error(prefix, message + " (see " + prefix + " --help)");
    return kExitUsage;
  }

  for (const Command& c : commands) {
    if (!c.sub->parsed()) continue;
    prefix = "tilepath " + c.sub->get_name();
    // Only run, sweep and worker poll the flag; the others get the signals' default actions.
    const std::string name = c.sub->get_name();
    if (name != "run" && name != "sweep" && name != "worker" && restore_default_signals()) return kExitCancelled;
    try {
      return c.action(context);
    } catch (const UsageError& e) {
      print_error(prefix, e.what());
      return kExitUsage;
    } catch (const ValidationError& e) {
      print_error(prefix, e.what());
      return kExitUsage;
    } catch (const StoreError& e) {
      print_error(prefix, e.what());
      return kExitFailure;
    } catch (const std::exception& e) {
      print_error(prefix, e.what());
      return kExitFailure;
    }
  }
  print_error(prefix, "no command given; see tilepath --help");
  return kExitUsage;
}
