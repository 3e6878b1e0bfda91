// `sexpgpu serve OPERAND --socket PATH [flags]`: a checkpoint's model behind a Unix socket
// (docs/serving.md). The model is opened by the library (src/library), as a program
// embedding libsexpgpu opens it, and served by serve's socket server (src/serve); this
// file parses the flags, prints the banner and the stop line, and turns signals into a
// stop.
#include <fmt/format.h>
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <thread>

#include "cli/common.h"
#include "cli/device_flags.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "lang/diagnostic.h"
#include "library/model.h"
#include "serve/errors.h"
#include "serve/server.h"
#include "serve/socket.h"

namespace sx::cli {
namespace {

struct ServeFlags {
  std::string operand;
  std::string socket;
  int batch = 1;
  serve::ServeOptions options;
  DeviceFlags device;
};

int report_coded(const std::string& code, const std::string& message, const std::string& help = {}) {
  lang::Diagnostic d;
  d.code = code;
  d.message = message;
  if (!help.empty()) d.helps.push_back(help);
  return report(lang::Error(std::move(d)));
}

const char* signal_name(int signal) {
  switch (signal) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
  }
  return "a signal";
}

std::string count(uint64_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

void print_specs(const char* label, const std::vector<serve::TensorSpec>& specs) {
  for (const serve::TensorSpec& s : specs) {
    std::printf("  %-7s %s %s %s\n", label, s.name.c_str(), graph::shape_str(s.shape).c_str(),
                std::string(graph::dtype_name(s.dtype)).c_str());
  }
}

// Serves until a stop signal; returns 128 + its number.
int serve_until_stopped(const ServeFlags& flags, const sigset_t& stop_signals) {
  serve::ModelSource source = serve::resolve_operand(flags.operand);
  if (source.files && !source.files->checked()) {
    lang::Diagnostic d;
    d.severity = lang::Severity::Warning;
    d.code = io::kCheckpointUnchecked;
    d.message = source.files->unchecked_message();
    std::fputs(lang::render(d, lang::stderr_wants_color()).c_str(), stderr);
  }
  // The library's model, as a program embedding it opens it: the socket adds the frames.
  auto make_device = [&] { return flags.device.make(); };
  library::Model model(std::move(source), {.shape = flags.options, .batch = flags.batch, .make_device = make_device});
  serve::Batcher& batcher = model.batcher();
  auto socket = std::make_unique<serve::ListeningSocket>(flags.socket);
  serve::Server server(batcher, serve::handshake_json(model.about()), model.at_limit(), std::move(socket),
                       serve::client_limit());

  std::printf("serving %s on %s, up to %d a call\n", model.source().shown.c_str(), flags.socket.c_str(), flags.batch);
  print_specs("inputs", model.about().inputs);
  print_specs("outputs", model.about().outputs);
  std::fflush(stdout);

  // The signals are blocked in every thread (see add_serve_command); this one waits for them.
  int stopped_by = 0;
  std::thread waiter([&] {
    sigwait(&stop_signals, &stopped_by);
    server.request_stop();
  });
  server.run();
  waiter.join();
  std::printf("sexpgpu serve: stopped by %s, %s in %s\n", signal_name(stopped_by),
              count(batcher.calls(), "call", "calls").c_str(), count(batcher.runs(), "run", "runs").c_str());
  std::fflush(stdout);
  return 128 + stopped_by;
}

}  // namespace

void add_serve_command(CLI::App& app, std::function<int()>& action) {
  auto* command = app.add_subcommand("serve", "Serve a checkpoint's model on a Unix socket (docs/serving.md)");
  auto flags = std::make_shared<ServeFlags>();
  command
      ->add_option("operand", flags->operand,
                   "LOC/step-N, a location (its newest checkpoint), or a directory `sexpgpu export` wrote")
      ->required();
  command->add_option("--socket", flags->socket, "The Unix socket to listen on")->required();
  command->add_option("--batch", flags->batch, "The most calls run together on the device (default 1)")
      ->check(CLI::Range(1, serve::kMaxBatch));
  command
      ->add_option("--output", flags->options.outputs,
                   "Only this output, repeatable, in the order given (default: every output)")
      ->allow_extra_args(false);
  command->add_flag("--at", flags->options.at,
                    "A last input `at` (i32 [1]); each output only at that place of its second axis");
  command->add_option("--precision", flags->options.precision, "bf16: run the model under the bf16 policy")
      ->check(CLI::IsMember({"bf16"}));
  command->add_flag("--trained", flags->options.trained,
                    "The trained weights instead of the :ema averages (a checkpoint's model only)");
  flags->device.add_to(*command);
  add_max_memory(*command);
  command->callback([&action, flags] {
    action = [flags] {
      // Before any thread exists, so that every thread inherits it: the stop signals
      // reach only the thread that waits for them, and a client gone mid-write is an
      // error on that write, not the end of the process.
      sigset_t stop_signals;
      sigemptyset(&stop_signals);
      for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop_signals, s);
      pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
      std::signal(SIGPIPE, SIG_IGN);
      return run_on_large_stack([&] {
        try {
          return serve_until_stopped(*flags, stop_signals);
        } catch (const lang::Error& e) {
          return report(e);
        } catch (const serve::ServeError& e) {
          return report_coded(e.code(), e.what(), e.help());
        } catch (const io::LoadError& e) {
          return report_coded(e.code(), e.what());
        } catch (const io::CheckpointError& e) {
          return report_coded(e.code(), e.what());
        }
      });
    };
  });
}

}  // namespace sx::cli
