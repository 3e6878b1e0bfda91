// `sexpgpu run FILE.sx`: train the run file (train/trainer.h).
#include <fmt/format.h>

#include "cli/common.h"
#include "cli/device_flags.h"
#include "distributed/world.h"
#include "io/checkpoint.h"
#include "train/codes.h"
#include "train/trainer.h"

namespace sx::cli {
namespace {

// Reports the error. In a run of several workers, one that every worker meets at the same
// step (a failed guard, a batch they cannot split) ends each alone, reported by the
// first; any other stops them all, since the others, waiting for this one in an
// exchange, would never see it.
int stop_workers(distributed::World* world, const lang::Error& error) {
  if (!world || world->size() == 1) return report(error);
  const std::string& which = error.diagnostic().code;
  if (which == train::kRunStopped || which == train::kBatchNotSplit) {
    return world->rank() == 0 ? report(error) : kExitDiagnosed;
  }
  world->abort(report(error));
}

}  // namespace

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
        std::unique_ptr<distributed::World> world;
        try {
          world = distributed::world_from_environment();
          options->world = world.get();
          std::unique_ptr<device::Device> on = device->make();
          if (steps_flag->count() > 0) options->steps = *steps;
          options->variant = flags->variant;
          session.load(options->file);
          train::train(session, *on, *options);
          return kExitOk;
        } catch (const lang::Error& e) {
          return stop_workers(world.get(), e);
        } catch (const io::CheckpointError& e) {
          lang::Diagnostic d;
          d.code = e.code();
          d.message = e.what();
          return stop_workers(world.get(), lang::Error(std::move(d)));
        } catch (const distributed::WorldError& e) {
          lang::Diagnostic d;
          d.code = train::kNoMpi;
          d.message = e.what();
          return report(lang::Error(std::move(d)));
        }
      });
    };
  });
}

}  // namespace sx::cli
