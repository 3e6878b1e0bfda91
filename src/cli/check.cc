// `sexpgpu check FILE.sx`: read and evaluate a file, run nothing, report every problem.
#include <cstdio>

#include "cli/common.h"

namespace sx::cli {

void add_check_command(CLI::App& app, std::function<int()>& action) {
  auto* command = app.add_subcommand("check", "Read and evaluate FILE.sx and report its errors; run nothing");
  auto file = std::make_shared<std::string>();
  auto flags = std::make_shared<EvalFlags>();
  command->add_option("file", *file, "The run file")->required();
  flags->add_to(*command);
  command->callback([&action, file, flags] {
    action = [file, flags] {
      return run_on_large_stack([&] {
        // Outlives the try: a diagnostic's spans point into the interpreter's sources.
        train::Session session(session_options(*flags));
        try {
          session.load(*file);
          std::printf("%s: ok\n", file->c_str());
          return kExitOk;
        } catch (const lang::Error& e) {
          return report(e);
        }
      });
    };
  });
}

}  // namespace sx::cli
