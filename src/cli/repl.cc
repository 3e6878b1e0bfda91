// `sexpgpu repl [FILE.sx]`: read-eval-print with line editing and history (libedit).
// A form may span lines; an error is reported and the session goes on.
#include <editline/readline.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

#include "cli/common.h"
#include "cli/eager.h"
#include "cli/session.h"
#include "lang/printer.h"
#include "lang/tracer.h"

namespace sx::cli {
namespace {

class LineSource {
 public:
  LineSource() : interactive_(isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)) {
    if (!interactive_) return;
    if (const char* home = std::getenv("HOME")) history_ = std::filesystem::path(home) / ".sexpgpu_history";
    using_history();
    if (!history_.empty()) read_history(history_.c_str());
  }
  ~LineSource() {
    if (interactive_ && !history_.empty()) write_history(history_.c_str());
  }

  std::optional<std::string> next(bool continuation) {
    if (!interactive_) {
      std::string line;
      if (!std::getline(std::cin, line)) return std::nullopt;
      return line;
    }
    char* raw = readline(continuation ? "...  " : "sx> ");
    if (!raw) return std::nullopt;
    std::string line(raw);
    std::free(raw);
    return line;
  }

  void remember(const std::string& entry) {
    if (interactive_ && entry.find_first_not_of(" \t\n") != std::string::npos) add_history(entry.c_str());
  }

 private:
  bool interactive_;
  std::string history_;
};

int repl(const std::string& file, const EvalFlags& flags, const DeviceFlags& device_flags) {
  EvalFlags repl_flags = flags;
  repl_flags.warn_redefinition = false;
  Session session(repl_flags);
  lang::Interpreter& interp = session.interp();
  std::unique_ptr<device::Device> device;
  try {
    device = device_flags.make();
    session.run_tensors_on(*device);
    if (file.empty()) session.start_empty();
    else session.load(file);
  } catch (const lang::Error& e) {
    return report(e);
  }
  LineSource lines;
  std::string pending;
  int entry = 0;
  while (auto line = lines.next(!pending.empty())) {
    pending += *line + "\n";
    try {
      const auto& source = interp.sources().add(fmt::format("<repl:{}>", ++entry), pending);
      auto forms = lang::read_forms(source, interp.options().reader_limits);
      lines.remember(pending.substr(0, pending.size() - 1));
      pending.clear();
      for (const auto& form : forms) {
        lang::Value value = session.run(interp.eval(form.value, form.span, session.top()), *device);
        std::printf("%s\n", lang::print(value).c_str());
        std::fflush(stdout);
      }
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
  device->add_to(*command);
  command->callback([&action, file, flags, device, full] {
    action = [file, flags, device, full] {
      return run_on_large_stack([&] {
        if (*full) lang::set_tensor_print_limit(0);
        return repl(*file, *flags, *device);
      });
    };
  });
}

}  // namespace sx::cli
