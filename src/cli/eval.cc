// `sexpgpu eval [--file FILE.sx] 'EXPR'`: evaluate, then print the value readably.
#include <cstdio>

#include "cli/common.h"
#include "cli/device_flags.h"
#include "lang/printer.h"
#include "lang/tracer.h"

namespace sx::cli {

void add_eval_command(CLI::App& app, std::function<int()>& action) {
  auto* command = app.add_subcommand("eval", "Evaluate EXPR (after FILE's top level, with --file) and print its value");
  auto file = std::make_shared<std::string>();
  auto expression = std::make_shared<std::string>();
  auto flags = std::make_shared<EvalFlags>();
  auto device = std::make_shared<DeviceFlags>();
  command->add_option("--file,-f", *file, "Evaluate this file's top level first; EXPR sees its definitions");
  command->add_option("expr", *expression, "The expressions to evaluate; the last one's value is printed")->required();
  auto full = std::make_shared<bool>(false);
  command->add_flag("--full", *full, "Print every element of a large tensor (else elided past 1000)");
  flags->add_to(*command);
  flags->add_checkpoint_to(*command);
  device->add_to(*command);
  command->callback([&action, file, expression, flags, device, full] {
    action = [file, expression, flags, device, full] {
      return run_on_large_stack([&] {
        if (*full) lang::set_tensor_print_limit(0);
        if (!file->empty() && !resolve_run_file(*file, *flags)) return kExitDiagnosed;
        // Outlives the try: a diagnostic's spans point into the interpreter's sources.
        train::Session session(session_options(*flags));
        try {
          std::unique_ptr<device::Device> on = device->make();
          session.run_tensors_on(*on);
          if (file->empty()) session.start_empty();
          else session.load(*file);
          if (!flags->checkpoint.empty()) session.use_checkpoint(flags->checkpoint);
          lang::Value value = session.interp().eval_text(*expression, "<expr>", session.top());
          value = session.run(value, *on);
          std::printf("%s\n", lang::print(value).c_str());
          return kExitOk;
        } catch (const lang::Error& e) {
          return report(e);
        }
      });
    };
  });
}

}  // namespace sx::cli
