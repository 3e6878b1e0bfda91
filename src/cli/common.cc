// Shared command plumbing.
#include "cli/common.h"

#include <fmt/format.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "device/device.h"
#include "graph/memory.h"

namespace sx::cli {

void add_max_memory(CLI::App& command) {
  auto text = std::make_shared<std::string>();
  const CLI::Option* flag = command.add_option(
      "--max-memory", *text,
      "The most bytes one tensor, program or value may ask for (E-MEM-001): 8G, 512M, 64K or bytes; default 3/4 "
      "of the machine's memory (SEXPGPU_MAX_MEMORY)");
  command.parse_complete_callback([text, flag] {
    std::string source = "--max-memory";
    std::string value = *text;
    if (flag->count() == 0) {
      const char* env = std::getenv("SEXPGPU_MAX_MEMORY");
      if (!env || !*env) {
        graph::set_memory_limit(device::default_memory_limit());
        return;
      }
      source = "SEXPGPU_MAX_MEMORY";
      value = env;
    }
    auto bytes = graph::parse_size(value);
    if (!bytes) {
      throw CLI::ValidationError(source, fmt::format("`{}` is not a memory size: write a whole number of bytes above "
                                                     "0, or one followed by K, M, G or T, such as 512M or 8G",
                                                     lang::shown_in_message(value)));
    }
    graph::set_memory_limit(*bytes);
  });
}

void EvalFlags::add_limits_to(CLI::App& command) {
  command.add_option("--max-steps", max_steps, "Stop evaluation after this many steps (E-EVAL-017); 0: no limit")
      ->check(CLI::NonNegativeNumber);
  add_max_memory(command);
  command.add_option("--allow-require", allow_require,
                     "A folder (or file) `require` may read besides the run file's folder and the library "
                     "(repeatable; also SEXPGPU_ALLOW_REQUIRE, folders separated by `:`)");
}

void EvalFlags::add_to(CLI::App& command) {
  add_limits_to(command);
  command.add_option("--variant", variant, "Evaluate under this defvariant's knob values");
  command.add_option("--knob", knobs, "Set a defknob: NAME=VALUE, VALUE read as one form (repeatable)")
      ->check([](const std::string& text) {
        auto eq = text.find('=');
        return eq == std::string::npos || eq == 0 ? std::string("expected NAME=VALUE") : std::string();
      });
}

void EvalFlags::add_checkpoint_to(CLI::App& command) {
  command.add_option(
      "--checkpoint", checkpoint,
      "Parameters from this checkpoint (LOC/step-N, or LOC for its newest) instead of their initializers");
}

namespace {

// The standard library: $SEXPGPU_LIB, then beside the installed program, then the source tree.
std::vector<std::string> library_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("SEXPGPU_LIB"); env && *env) dirs.emplace_back(env);
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto installed = exe.parent_path().parent_path() / "share" / "sexpgpu" / "lib";
    if (std::filesystem::is_directory(installed, ec)) dirs.push_back(installed.string());
  }
  dirs.emplace_back(SEXPGPU_LIB_DIR);
  return dirs;
}

}  // namespace

train::SessionOptions session_options(const EvalFlags& flags) {
  train::SessionOptions options;
  options.interpreter.library_dirs = library_dirs();
  options.interpreter.max_steps = flags.max_steps;
  options.interpreter.require_allowed = flags.allow_require;
  if (const char* env = std::getenv("SEXPGPU_ALLOW_REQUIRE")) {
    std::string_view folders = env;
    for (size_t start = 0, end; start <= folders.size(); start = end + 1) {
      end = std::min(folders.find(':', start), folders.size());
      if (end > start) options.interpreter.require_allowed.emplace_back(folders.substr(start, end - start));
    }
  }
  options.interpreter.warn_redefinition = flags.warn_redefinition;
  options.interpreter.max_stack_bytes = kEvalStackBytes;
  options.choices.variant = flags.variant;
  for (const auto& knob : flags.knobs) {
    auto eq = knob.find('=');
    options.choices.knobs[knob.substr(0, eq)] = knob.substr(eq + 1);
  }
  return options;
}

namespace {

// E-MEM-001 without a span: the request, or the allocation, was not a form's.
int report_memory(std::string message, std::string_view help) {
  lang::Diagnostic d;
  d.code = graph::kOverMemoryLimit;
  d.message = std::move(message);
  d.helps.emplace_back(help);
  return report(lang::Error(std::move(d)));
}

// The exit status of `body`, or of an internal error: an exception no command turned
// into a diagnostic is a bug of ours, reported as one rather than an abort. Memory is
// the exception: a request over the limit, or an allocation the machine refused, is
// the user's to fix whichever code made it.
int last_resort(const std::function<int()>& body) {
  try {
    return body();
  } catch (const graph::MemoryLimitError& e) {
    return report_memory(e.what(), graph::kMemoryLimitHelp);
  } catch (const std::bad_alloc&) {
    return report_memory(graph::out_of_memory_message("running the command"), graph::kOutOfMemoryHelp);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr,
                 "internal error: %s\n  = note: SexpGPU %s; this is a bug: please report it with the command and "
                 "the files it read\n",
                 e.what(), SEXPGPU_VERSION);
  } catch (...) {
    std::fflush(stdout);
    std::fprintf(stderr,
                 "internal error: an unknown exception\n  = note: SexpGPU %s; this is a bug: please report it\n",
                 SEXPGPU_VERSION);
  }
  return kExitInternal;
}

}  // namespace

int run_on_large_stack(const std::function<int()>& body) {
  struct Task {
    const std::function<int()>* body;
    int result = kExitDiagnosed;
  } task{&body};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kLargeStackBytes);
  pthread_t thread;
  auto entry = [](void* p) -> void* {
    auto* t = static_cast<Task*>(p);
    t->result = last_resort(*t->body);
    return nullptr;
  };
  if (pthread_create(&thread, &attr, entry, &task) != 0) {
    pthread_attr_destroy(&attr);
    return last_resort(body);  // no thread to be had: run here, where the smaller stack limit still holds
  }
  // The waiting thread takes no Ctrl-C: it goes to the evaluating thread, whose read a
  // handler's signal must interrupt (the REPL's prompt). Unhandled, it ends the process
  // from either thread.
  sigset_t interrupt, before;
  sigemptyset(&interrupt);
  sigaddset(&interrupt, SIGINT);
  pthread_sigmask(SIG_BLOCK, &interrupt, &before);
  pthread_join(thread, nullptr);
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  pthread_attr_destroy(&attr);
  return task.result;
}

int report(const lang::Error& error) {
  std::fflush(stdout);
  std::fputs(lang::render(error.diagnostic(), lang::stderr_wants_color()).c_str(), stderr);
  return kExitDiagnosed;
}

}  // namespace sx::cli
