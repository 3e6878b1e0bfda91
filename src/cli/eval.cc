// `sexpgpu eval [--file FILE.sx] 'EXPR'`: evaluate, then print the value readably.
#include <cstdio>

#include "cli/common.h"
#include "cli/eager.h"
#include "cli/session.h"
#include "lang/printer.h"

namespace sx::cli {

void add_eval_command(CLI::App& app, std::function<int()>& action) {
  auto* command = app.add_subcommand("eval", "Evaluate EXPR (after FILE's top level, with --file) and print its value");
  auto file = std::make_shared<std::string>();
  auto expression = std::make_shared<std::string>();
  auto flags = std::make_shared<EvalFlags>();
  auto device = std::make_shared<DeviceFlags>();
  command->add_option("--file,-f", *file, "Evaluate this file's top level first; EXPR sees its definitions");
  command->add_option("expr", *expression, "The expressions to evaluate; the last one's value is printed")->required();
  flags->add_to(*command);
  device->add_to(*command);
  command->callback([&action, file, expression, flags, device] {
    action = [file, expression, flags, device] {
      return run_on_large_stack([&] {
        // Outlives the try: a diagnostic's spans point into the interpreter's sources.
        Session session(*flags);
        try {
          if (file->empty()) session.start_empty();
          else session.load(*file);
          lang::Value value = session.interp().eval_text(*expression, "<expr>", session.top());
          value = session.run(value, *device->make());
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
