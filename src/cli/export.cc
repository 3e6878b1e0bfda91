// `sexpgpu export FILE.sx --checkpoint LOC -o DIR [--trained] [--format hf]`: a checkpoint's model and
// weights as a folder of their own (train/export.h).
#include "train/export.h"

#include "cli/common.h"

namespace sx::cli {

void add_export_command(CLI::App& app, std::function<int()>& action) {
  auto* command = app.add_subcommand("export", "Write a checkpoint's model and weights as a folder of their own");
  auto options = std::make_shared<train::ExportOptions>();
  command->add_option("file", options->file, "The run file whose checkpoint it is")->required();
  command->add_option("--checkpoint", options->checkpoint, "The checkpoint: LOC/step-N, or LOC for its newest")
      ->required();
  command->add_option("-o", options->out, "The folder to write; one that exists is refused")->required();
  command->add_flag("--trained", options->trained, "The trained weights, not the :ema averages");
  command
      ->add_option("--format", options->format,
                   "sexpgpu (model.json and params.safetensors) or hf (a Hugging Face folder)")
      ->check(CLI::IsMember({"sexpgpu", "hf"}));
  add_max_memory(*command);
  command->callback([&action, options] {
    action = [options] {
      return run_on_large_stack([&] {
        EvalFlags flags;
        if (!resolve_run_file(options->file, flags)) return kExitDiagnosed;
        // Outlives the try: a diagnostic's spans point into the session's sources.
        std::optional<train::Session> session;
        try {
          train::export_model(*options, session_options(flags).interpreter, session);
          return kExitOk;
        } catch (const lang::Error& e) {
          return report(e);
        }
      });
    };
  });
}

}  // namespace sx::cli
