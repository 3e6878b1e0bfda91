// `sexpgpu run`: the training loop (docs/training.md). The step is one program compiled once
// (train/step.h); parameters and optimizer state stay in a store on the device, updated
// in place; a background thread makes the batches; the loop feeds them, reads the loss
// and metrics, logs, and writes checkpoints (io/checkpoint.h) that a later run resumes
// from, reaching the same bits as an unbroken run.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "device/device.h"
#include "distributed/world.h"
#include "graph/graph.h"
#include "train/session.h"

namespace sx::train {

struct TrainOptions {
  std::string file;            // the run file, as given
  std::string checkpoint_dir;  // empty: runs/<slug> in the working directory
  std::optional<int64_t> steps;
  bool fresh = false;  // never resume: start in a location of its own
  std::string variant;
  // The workers of a data-parallel run (docs/distributed.md); null for a process alone.
  distributed::World* world = nullptr;
};

// The run's slug: the file's stem (its folder's name for a file named run.sx), and the
// variant after a dash when there is one.
std::string run_slug(const TrainOptions& options);

// A run's training step as `check` shows it.
struct CheckedStep {
  graph::Graph with_composites;  // after the passes, each composite one node (runtime::optimized_with_composites)
  graph::Graph compiled;         // what the device's plan runs (runtime::Compiled::graph)
};

// What `check` does with a run: when the loaded session's `defrun` has `:data`, opens its
// loader and compiles its training step, its :eval passes and its model alone for
// `device`, as `train` would, runs nothing, and returns the step's graphs; else nothing.
// Diagnosed errors are lang::Error.
std::optional<CheckedStep> compile_run(Session& session, device::Device& device);

// Trains the loaded session's run on `device`. Diagnosed errors are lang::Error (E-RUN,
// E-CKPT, E-LOAD). Returns the location the checkpoints are in.
std::string train(Session& session, device::Device& device, const TrainOptions& options);

}  // namespace sx::train
