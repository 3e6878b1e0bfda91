// What every command shares: building the interpreter, reporting errors, exit codes.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "lang/interp.h"
#include "train/session.h"

namespace sx::cli {

// Exit codes (docs/cli.md).
constexpr int kExitOk = 0;
constexpr int kExitDiagnosed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInternal = 70;  // an internal error (EX_SOFTWARE): a bug to report

// Flags every evaluating command takes.
struct EvalFlags {
  uint64_t max_steps = 0;
  std::string variant;
  std::vector<std::string> knobs;  // NAME=VALUE
  bool warn_redefinition = true;   // off in the REPL, where redefining is the point
  std::string checkpoint;          // eval and repl: parameters from this checkpoint
  // --allow-require: folders `require` may read besides the run file's.
  std::vector<std::string> allow_require;
  // --max-steps, --max-memory, --allow-require, --variant and --knob.
  void add_to(CLI::App& command);
  // --max-steps, --max-memory and --allow-require, for a command that compiles a file as
  // a checkpoint records it.
  void add_limits_to(CLI::App& command);
  // --checkpoint, for the commands that run the file's model (eval, repl).
  void add_checkpoint_to(CLI::App& command);
};

// --max-memory SIZE, else SEXPGPU_MAX_MEMORY, else device::default_memory_limit(): the
// process's memory limit, set once the command's flags are parsed. A value that is not
// a size is a usage error naming the flag or the variable.
void add_max_memory(CLI::App& command);

// A session's options for a command: the interpreter's (the library path, limits for
// the large stack) and the knobs and variant chosen.
train::SessionOptions session_options(const EvalFlags& flags);

// Runs `body` on a thread with a large stack, so deep (but bounded) recursion in the
// evaluator meets E-EVAL-008 rather than the end of the native stack. An exception that
// escapes `body` is reported as an internal error, exit kExitInternal.
int run_on_large_stack(const std::function<int()>& body);

// Prints a diagnosed error to standard error and returns kExitDiagnosed.
int report(const lang::Error& error);

// The native stack `run_on_large_stack` gives, and how much of it evaluation may use.
constexpr size_t kLargeStackBytes = size_t{1} << 30;
constexpr size_t kEvalStackBytes = kLargeStackBytes - (size_t{64} << 20);

// One function per command, each in its own file.
void add_check_command(CLI::App& app, std::function<int()>& action);
void add_eval_command(CLI::App& app, std::function<int()>& action);
void add_run_command(CLI::App& app, std::function<int()>& action);
void add_evaluate_command(CLI::App& app, std::function<int()>& action);
void add_export_command(CLI::App& app, std::function<int()>& action);
void add_repl_command(CLI::App& app, std::function<int()>& action);
void add_explain_error_command(CLI::App& app, std::function<int()>& action);
void add_explain_command(CLI::App& app, std::function<int()>& action);
void add_doc_command(CLI::App& app, std::function<int()>& action);
void add_serve_command(CLI::App& app, std::function<int()>& action);
void add_bundle_command(CLI::App& app, std::function<int()>& action);
void add_new_command(CLI::App& app, std::function<int()>& action);

// The run file FILE names (bundle.cc): FILE itself, or a bundle's (a folder holding
// bundle.json, or its archive), checked first; the bundle's variant and knobs become
// defaults of `flags` (those given win) and its folder one `require` may read.
std::string run_file_of(const std::string& file, EvalFlags& flags);
// `file` replaced by run_file_of's answer; false once its error is reported.
bool resolve_run_file(std::string& file, EvalFlags& flags);

}  // namespace sx::cli
