// sexpgpu: the command line. Parses flags and hands each command to its own file.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>

#include "cli/common.h"

namespace {

// CLI11's message for a usage error, which quotes the arguments whole, with each word
// shortened as every message of ours shortens the user's text.
std::string usage_failure(const CLI::App* app, const CLI::Error& error) {
  std::string message = CLI::FailureMessage::simple(app, error);
  std::string out;
  for (size_t start = 0; start < message.size();) {
    size_t end = std::min(message.find_first_of(" \n", start), message.size());
    out += sx::lang::shown_in_message(std::string_view(message).substr(start, end - start));
    if (end < message.size()) out += message[end];
    start = end + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sx::cli;
  CLI::App app{"SexpGPU: write a whole deep-learning experiment as one small Lisp file."};
  app.name("sexpgpu");
  app.failure_message(usage_failure);
  app.set_version_flag("--version", std::string("sexpgpu ") + SEXPGPU_VERSION);
  app.require_subcommand(1);
  std::function<int()> action;
  add_check_command(app, action);
  add_eval_command(app, action);
  add_run_command(app, action);
  add_evaluate_command(app, action);
  add_serve_command(app, action);
  add_export_command(app, action);
  add_repl_command(app, action);
  add_explain_command(app, action);
  add_explain_error_command(app, action);
  add_doc_command(app, action);
  add_bundle_command(app, action);
  add_new_command(app, action);
  // The first word that is not a top-level flag names the subcommand. CLI11 would answer an
  // unknown one followed by --help with the top-level help and exit 0; it is a usage error.
  const CLI::App& commands = app;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h" || arg == "--version") continue;
    if (arg.starts_with("-")) break;  // a flag CLI11 reports itself
    auto known = commands.get_subcommands([&](const CLI::App* command) { return command->get_name() == arg; });
    if (known.empty()) {
      std::string names;
      for (const CLI::App* command : commands.get_subcommands({})) {
        names += (names.empty() ? "" : ", ") + command->get_name();
      }
      std::fprintf(stderr, "sexpgpu: there is no subcommand `%s`; the subcommands are %s (see sexpgpu --help)\n",
                   sx::lang::shown_in_message(arg).c_str(), names.c_str());
      return kExitUsage;
    }
    break;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }
  return action ? action() : kExitUsage;
}
