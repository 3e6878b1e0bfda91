// `sexpgpu repl [FILE.sx]`: read-eval-print with line editing, history and completion of
// names (libedit). A form may span lines; an error is reported and the session goes on.
// On a terminal a banner says how to get help and how to leave: (quit), (exit) or Ctrl-D;
// Ctrl-C clears the line being typed, or interrupts the evaluation (E-EVAL-020).
#include <editline/readline.h>
#include <fmt/format.h>
#include <sys/select.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>
#include <variant>

#include "cli/common.h"
#include "cli/device_flags.h"
#include "device/interrupt.h"
#include "lang/printer.h"
#include "lang/tracer.h"

namespace sx::cli {
namespace {

// What `(quit)` and `(exit)` throw: the REPL ends with this status.
struct QuitRequest {
  int status;
};

lang::Value quit(lang::Args& a) {
  int64_t status = a.size() ? a.integer(0) : 0;
  if (status < 0 || status > 255) a.type_error(0, "an exit status from 0 to 255");
  throw QuitRequest{static_cast<int>(status)};
}

// The REPL's own builtins, documented like every other (their family is listed by
// `(help)` in the REPL, and in docs/cli.md rather than docs/builtins.md).
void install_repl_builtins(lang::Interpreter& interp) {
  for (const char* name : {"quit", "exit"}) {
    interp.define_builtin(
        name, quit,
        lang::BuiltinDoc{"(&optional status)", "Leaves the REPL (as Ctrl-D does), with exit status status (0).",
                         fmt::format("({})", name), "The REPL"});
  }
}

// Completion: the names the session can see (its definitions, builtins, special forms).
lang::Interpreter* completing_interp = nullptr;
lang::Env* completing_env = nullptr;

std::vector<std::string> names_starting_with(std::string_view prefix) {
  std::set<std::string> names;
  for (lang::Env* env = completing_env; env; env = env->parent()) {
    for (const auto& [symbol, value] : env->bindings()) {
      if (symbol->name.starts_with(prefix)) names.insert(symbol->name);
    }
  }
  for (const lang::Symbol* symbol : completing_interp->special_form_names()) {
    if (symbol->name.starts_with(prefix)) names.insert(symbol->name);
  }
  return {names.begin(), names.end()};
}

char* next_completion(const char* text, int state) {
  static std::vector<std::string> matches;
  static size_t index = 0;
  if (state == 0) {
    matches = completing_env ? names_starting_with(text) : std::vector<std::string>{};
    index = 0;
  }
  return index < matches.size() ? strdup(matches[index++].c_str()) : nullptr;
}

char** complete(const char* text, int, int) {
  rl_attempted_completion_over = 1;  // names only, never file names
  return rl_completion_matches(text, next_completion);
}

// Where a name ends: the characters that cannot be part of a symbol.
char word_breaks[] = " \t\n\"'`,;()[]{}";

// Set by Ctrl-C (SIGINT) in an interactive session, the one thing its handler may do.
// At the prompt the line reader gives the line up (read_key); during evaluation the
// interpreter, and a device running a graph, stop at their next step.
std::atomic<bool> interrupted{false};

void on_interrupt(int) { interrupted.store(true); }

// The signal mask read_key waits under: SIGINT unblocked. At the prompt SIGINT is
// blocked everywhere else, so that a Ctrl-C pressed while libedit draws is delivered
// during the wait, which it ends, rather than before a read that would then block.
sigset_t prompt_wait_mask;

// libedit's character reader: a byte of the terminal, or EOF (libedit then ends the
// line) once Ctrl-C was pressed.
int read_key(FILE* in) {
  int fd = fileno(in);
  while (!interrupted.load()) {
    fd_set readable;
    FD_ZERO(&readable);
    FD_SET(fd, &readable);
    if (pselect(fd + 1, &readable, nullptr, nullptr, nullptr, &prompt_wait_mask) < 0) {
      if (errno == EINTR) continue;
      return EOF;
    }
    unsigned char key;
    ssize_t n = read(fd, &key, 1);
    if (n == 1) return key;
    if (n == 0 || errno != EINTR) return EOF;
  }
  return EOF;
}

class LineSource {
 public:
  LineSource() : interactive_(isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)) {
    if (!interactive_) return;
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    rl_catch_signals = 0;  // libedit's own handler would pass the signal on to its default
    rl_getc_function = read_key;
    if (const char* home = std::getenv("HOME")) history_ = std::filesystem::path(home) / ".sexpgpu_history";
    rl_readline_name = "sexpgpu";
    rl_attempted_completion_function = complete;
    rl_basic_word_break_characters = word_breaks;
    rl_completer_word_break_characters = word_breaks;
    using_history();
    if (!history_.empty()) read_history(history_.c_str());
  }

  bool interactive() const { return interactive_; }

  // What the prompt gives: a line, Ctrl-C (which drops what was typed) or the end of input.
  struct CtrlC {};
  struct EndOfInput {};
  using Input = std::variant<std::string, CtrlC, EndOfInput>;

  Input next(bool continuation) {
    if (!interactive_) {
      std::string line;
      if (!std::getline(std::cin, line)) return EndOfInput{};
      return line;
    }
    sigset_t interrupt_only;
    sigemptyset(&interrupt_only);
    sigaddset(&interrupt_only, SIGINT);
    pthread_sigmask(SIG_BLOCK, &interrupt_only, &prompt_wait_mask);
    interrupted.store(false);
    char* raw = readline(continuation ? "...  " : "sx> ");
    pthread_sigmask(SIG_SETMASK, &prompt_wait_mask, nullptr);
    if (interrupted.load()) {
      std::free(raw);
      std::fputs("^C\n", stdout);
      std::fflush(stdout);
      return CtrlC{};
    }
    if (!raw) return EndOfInput{};
    std::string line(raw);
    std::free(raw);
    return line;
  }

  // Kept in the history file at once, so a session that is killed loses none of it.
  void remember(const std::string& entry) {
    if (!interactive_ || entry.find_first_not_of(" \t\n") == std::string::npos) return;
    add_history(entry.c_str());
    if (!history_.empty()) write_history(history_.c_str());
  }

 private:
  bool interactive_;
  std::string history_;
};

int repl(const std::string& file, const EvalFlags& flags, const DeviceFlags& device_flags) {
  EvalFlags repl_flags = flags;
  repl_flags.warn_redefinition = false;
  train::Session session(session_options(repl_flags));
  lang::Interpreter& interp = session.interp();
  std::unique_ptr<device::Device> device;
  try {
    device = device_flags.make();
    session.run_tensors_on(*device);
    if (file.empty()) session.start_empty();
    else session.load(file);
    if (!flags.checkpoint.empty()) session.use_checkpoint(flags.checkpoint);
  } catch (const lang::Error& e) {
    return report(e);
  }
  // After the file: only what is typed at the prompt can call them.
  install_repl_builtins(interp);
  LineSource lines;
  if (lines.interactive()) {
    interp.interrupt_when(&interrupted);
    device::stop_runs_when(&interrupted);
  }
  completing_interp = &interp;
  completing_env = &session.top();
  if (lines.interactive()) {
    std::printf(
        "SexpGPU %s. (help) for help, (doc NAME) for a function, TAB completes a name; "
        "(quit) or Ctrl-D to leave.\n",
        SEXPGPU_VERSION);
    std::fflush(stdout);
  }
  std::string pending;
  int entry = 0;
  for (;;) {
    LineSource::Input input = lines.next(!pending.empty());
    if (std::holds_alternative<LineSource::EndOfInput>(input)) break;
    if (std::holds_alternative<LineSource::CtrlC>(input)) {
      pending.clear();
      continue;
    }
    pending += std::get<std::string>(input) + "\n";
    try {
      // Not kept in the interpreter's sources: the entry's spans hold its text for as long
      // as anything (a definition, a value's trace, an error) points into it.
      lang::SourceRef source = lang::SourceFile::make(fmt::format("<repl:{}>", ++entry), pending);
      auto forms = lang::read_forms(*source, interp.options().reader_limits);
      lines.remember(pending.substr(0, pending.size() - 1));
      pending.clear();
      // --max-steps bounds each input, so one that spends it leaves the session usable.
      interp.reset_steps();
      for (const auto& form : forms) {
        lang::Value value = session.run(interp.eval(form.value, form.span, session.top()), *device);
        std::printf("%s\n", lang::print(value).c_str());
        std::fflush(stdout);
      }
      session.forget_unreachable();
    } catch (const QuitRequest& quit) {
      return quit.status;
    } catch (const lang::Error& e) {
      if (lang::is_incomplete_input(e, pending)) {
        --entry;
        continue;
      }
      lines.remember(pending.substr(0, pending.size() - 1));
      pending.clear();
      report(e);
    }
  }
  if (!pending.empty()) std::fputs("sexpgpu repl: input ended inside a form\n", stderr);
  return kExitOk;
}

}  // namespace

void add_repl_command(CLI::App& app, std::function<int()>& action) {
  auto* command = app.add_subcommand("repl", "Evaluate expressions interactively (after FILE's top level, if given)");
  auto file = std::make_shared<std::string>();
  auto flags = std::make_shared<EvalFlags>();
  auto device = std::make_shared<DeviceFlags>();
  auto full = std::make_shared<bool>(false);
  command->add_option("file", *file, "Evaluate this file's top level first");
  command->add_flag("--full", *full, "Print every element of a large tensor (else elided past 1000)");
  flags->add_to(*command);
  flags->add_checkpoint_to(*command);
  device->add_to(*command);
  command->callback([&action, file, flags, device, full] {
    action = [file, flags, device, full] {
      return run_on_large_stack([&] {
        if (*full) lang::set_tensor_print_limit(0);
        if (!file->empty() && !resolve_run_file(*file, *flags)) return kExitDiagnosed;
        return repl(*file, *flags, *device);
      });
    };
  });
}

}  // namespace sx::cli
