// `sexpgpu evaluate FILE.sx --checkpoint LOC [--trained]`: the run file's :eval passes
// on a checkpoint (train/eval_pass.h).
#include "cli/common.h"
#include "cli/device_flags.h"
#include "train/eval_pass.h"

namespace sx::cli {

void add_evaluate_command(CLI::App& app, std::function<int()>& action) {
  auto* command = app.add_subcommand("evaluate", "Run FILE's :eval passes on a checkpoint of its run");
  auto file = std::make_shared<std::string>();
  auto checkpoint = std::make_shared<std::string>();
  auto trained = std::make_shared<bool>(false);
  auto flags = std::make_shared<EvalFlags>();
  auto device = std::make_shared<DeviceFlags>();
  command->add_option("file", *file, "The run file")->required();
  command->add_option("--checkpoint", *checkpoint, "The checkpoint: LOC/step-N, or LOC for its newest")->required();
  command->add_flag("--trained", *trained, "The trained parameters, not the :ema averages the checkpoint holds");
  flags->add_to(*command);
  device->add_to(*command);
  command->callback([&action, file, checkpoint, trained, flags, device] {
    action = [file, checkpoint, trained, flags, device] {
      return run_on_large_stack([&] {
        train::Session session(session_options(*flags));
        try {
          std::unique_ptr<device::Device> on = device->make();
          session.load(*file);
          train::evaluate_checkpoint(session, *on, *checkpoint, *trained);
          return kExitOk;
        } catch (const lang::Error& e) {
          return report(e);
        }
      });
    };
  });
}

}  // namespace sx::cli
