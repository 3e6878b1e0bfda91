// How a run's steps run (docs/distributed.md). The fused step is one program a step on the
// whole batch. The micro-batched step cuts the global batch into micro-batches of fixed
// rows, computes each one's gradients apart, sums them in one fixed binary tree
// (distributed/ordered_sum.h) across the workers of the world, and runs the same update
// on every worker: its bits depend on the micro-batches, never on the number of workers.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "distributed/world.h"
#include "runtime/program.h"
#include "train/loaders.h"
#include "train/session.h"
#include "train/step.h"
#include "train/step_results.h"

namespace sx::train {

// A global batch cut into `count` micro-batches of `rows` rows; each worker owns
// `per_worker` neighbouring ones.
struct MicroBatches {
  int64_t rows = 0, count = 1, per_worker = 1;
};

// The micro-batches of a global batch of `batch` rows for `workers` workers: of `rows`
// rows (defrun's `:micro-batch`) when given, else the batch cut into the most parts, a
// power of two up to kDerivedMicroBatches, that divide it. E-RUN-012 at defrun when `rows`
// does not divide the batch, or the workers cannot each own a power of two of neighbouring
// micro-batches (so that their partial sums are subtrees of the one tree).
inline constexpr int64_t kDerivedMicroBatches = 8;
MicroBatches micro_batches(const RunSettings& run, std::optional<int64_t> rows, int64_t batch, int workers);

class StepRunner {
 public:
  virtual ~StepRunner() = default;
  // Runs the step after `steps_done` steps, on the parameters and state in `store`, and
  // returns what the whole global batch's step reports; adds to `waited` the seconds it
  // waited for its batch.
  virtual StepResults run(runtime::Store& store, int64_t steps_done, double& waited) = 0;
};

// Where a run's steps read their data: the loader, the seed, and the steps first ... end-1.
struct StepData {
  std::shared_ptr<const Loader> loader;
  uint64_t seed = 0;
  int64_t first = 0, end = 0;
};

// The fused step (a StepGraph traced unsplit, on the global batch of `batch` rows).
std::unique_ptr<StepRunner> fused_steps(Session& session, device::Device& device, const StepGraph& step,
                                        const StepData& data, int64_t batch);

// The micro-batched step (a StepGraph traced split, on `micro.rows` rows) of this worker of
// `world`. Each collective's failure is E-RUN-013, naming it. The world must outlive it.
std::unique_ptr<StepRunner> micro_batched_steps(Session& session, device::Device& device, const StepGraph& step,
                                                const StepData& data, const MicroBatches& micro,
                                                distributed::World& world);

// Bytes one worker sends a step in the micro-batched step's collectives, for
// `gradient_floats` f32 gradients and `numbers` logged numbers among `workers` workers:
// each sends its partial sum of the others' slices (all-to-all), then its own slice of
// the finished sum (all-gather): 2 (N-1)/N of the gradients' bytes, as a ring all-reduce.
int64_t collective_bytes_per_step(int64_t gradient_floats, int64_t numbers, int workers);

// Compiles a step's graph for the device: its constants are folded, which may read an
// index outside its axis (the diagnostic names it).
runtime::Program compile_step(Session& session, device::Device& device, graph::Graph graph,
                              std::vector<runtime::Binding> inputs, std::vector<runtime::Binding> outputs);

}  // namespace sx::train
