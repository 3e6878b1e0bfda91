// sexpgpu: the command line. Parses flags and hands each command to its own file.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/common.h"

int main(int argc, char** argv) {
  using namespace sx::cli;
  CLI::App app{"SexpGPU: write a whole deep-learning experiment as one small Lisp file."};
  app.name("sexpgpu");
  app.set_version_flag("--version", std::string("sexpgpu ") + SEXPGPU_VERSION);
  app.require_subcommand(1);
  std::function<int()> action;
  add_check_command(app, action);
  add_eval_command(app, action);
  add_repl_command(app, action);
  add_explain_command(app, action);
  add_explain_error_command(app, action);
  add_doc_command(app, action);
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
