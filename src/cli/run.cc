// `sexpgpu run FILE.sx`: train the run file (train/trainer.h).
#include <fmt/format.h>

#include "cli/common.h"
#include "cli/device_flags.h"
#include "io/checkpoint.h"
#include "train/trainer.h"

namespace sx::cli {

void add_run_command(CLI::App& app, std::function<int()>& action) {
  auto* command = app.add_subcommand("run", "Train FILE: its model, loss, optimizer and data as its defrun says");
  auto options = std::make_shared<train::TrainOptions>();
  auto steps = std::make_shared<int64_t>(0);
  auto flags = std::make_shared<EvalFlags>();
  auto device = std::make_shared<DeviceFlags>();
  command->add_option("file", options->file, "The run file")->required();
  command->add_option("--checkpoint-dir", options->checkpoint_dir,
                      "Where checkpoints go, and the run resumes from (default runs/SLUG)");
  auto* steps_flag = command->add_option("--steps", *steps, "The run's total steps, in place of defrun's :steps")
                         ->check(CLI::PositiveNumber);
  command->add_flag("--fresh", options->fresh,
                    "Never resume: start over, in a location of its own when the given one holds checkpoints");
  flags->add_to(*command);
  device->add_to(*command);
  command->callback([&action, options, steps, steps_flag, flags, device] {
    action = [options, steps, steps_flag, flags, device] {
      return run_on_large_stack([&] {
        if (!resolve_run_file(options->file, *flags)) return kExitDiagnosed;
        train::Session session(session_options(*flags));
        try {
          std::unique_ptr<device::Device> on = device->make();
          if (steps_flag->count() > 0) options->steps = *steps;
          options->variant = flags->variant;
          session.load(options->file);
          train::train(session, *on, *options);
          return kExitOk;
        } catch (const lang::Error& e) {
          return report(e);
        } catch (const io::CheckpointError& e) {
          lang::Diagnostic d;
          d.code = e.code();
          d.message = e.what();
          return report(lang::Error(std::move(d)));
        }
      });
    };
  });
}

}  // namespace sx::cli
