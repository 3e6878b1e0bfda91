// `sexpgpu evaluate FILE.sx --checkpoint LOC [--trained]`: the run file's :eval passes
// on a checkpoint, compiled as its run compiled it (train/eval_pass.h).
#include "cli/common.h"
#include "cli/device_flags.h"
#include "train/eval_pass.h"

namespace sx::cli {

void add_evaluate_command(CLI::App& app, std::function<int()>& action) {
  auto* command = app.add_subcommand("evaluate", "Run FILE's :eval passes on a checkpoint of its run");
  auto options = std::make_shared<train::EvaluateOptions>();
  auto flags = std::make_shared<EvalFlags>();
  auto device = std::make_shared<DeviceFlags>();
  command->add_option("file", options->file, "The run file")->required();
  command->add_option("--checkpoint", options->checkpoint, "The checkpoint: LOC/step-N, or LOC for its newest")
      ->required();
  command->add_flag("--trained", options->trained,
                    "The trained parameters, not the :ema averages the checkpoint holds");
  // No --variant or --knob: the file is compiled under those the checkpoint records.
  flags->add_limits_to(*command);
  device->add_to(*command);
  command->callback([&action, options, flags, device] {
    action = [options, flags, device] {
      return run_on_large_stack([&] {
        if (!resolve_run_file(options->file, *flags)) return kExitDiagnosed;
        // Outlives the try: a diagnostic's spans point into the session's sources.
        std::optional<train::Session> session;
        try {
          std::unique_ptr<device::Device> on = device->make();
          train::evaluate_checkpoint(*options, session_options(*flags).interpreter, *on, session);
          return kExitOk;
        } catch (const lang::Error& e) {
          return report(e);
        }
      });
    };
  });
}

}  // namespace sx::cli
